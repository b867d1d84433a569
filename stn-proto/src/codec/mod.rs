//! Wire codecs: the long-link frame format and the short-link HTTP/1.1 exchange.
//! Both decoders are incremental (any chunking works), bounded (size caps) and
//! never panic on network input. The long-link format is pluggable
//! ([`LongLinkCodec`]); Mars's 20-byte header ([`MarsCodec`]) is the default.

mod frame;
mod frame_codec;
pub mod http;
pub mod longlink;

pub use frame_codec::{FrameHead, HeadStatus, LongLinkCodec, MarsCodec, SharedCodec};
