//! Wire codecs: the long-link frame format and the short-link HTTP/1.1 exchange.
//! Both decoders are incremental (any chunking works), bounded (size caps) and
//! never panic on network input.

pub mod http;
pub mod longlink;
