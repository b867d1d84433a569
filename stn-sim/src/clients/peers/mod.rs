//! Peer client models (peers.md §8): the clients the Mars benchmark
//! compared against, as it ran them and as their documentation recommends.
//!
//! Every model is a [`crate::workload::CallClient`] on the simulator's TCP
//! stack, with the SYN schedule of the OS it runs on:
//! - [`OkHttp2017`]: OkHttp 2.x as benchmarked — a new client per call,
//!   `Connection: close`, an IP literal (one route, one attempt), 10 s
//!   connect/read timeouts, no retry; and the sensitivity variant with the
//!   connect timeout raised to 60 s. It wraps [`crate::clients::fresh_conn`].
//! - [`OkHttp5`]: OkHttp 5 as recommended today — shared client, connection
//!   pool, fast fallback across several IPs, `retryOnConnectionFailure`.
//! - [`NsUrlSession`]: NSURLSession/AFNetworking as benchmarked (a new
//!   session per request, 60 s idle request timer) and as recommended
//!   (shared session, pool, Happy Eyeballs).
//!
//! The pooled, multi-route models share one machine, [`PeerClient`],
//! configured by a [`PeerConfig`]; the server they talk to for keep-alive
//! runs is [`KeepAliveApp`].
//!
//! What the models give in the sensitivity test (peers.md §3.3; 100% loss
//! for R s, then 3G; one call at t = 0; completion in s or failure time;
//! `tests/peers_sensitivity.rs` asserts each cell from the SYN schedules):
//!
//! | R | OkHttp 2017 <6.5 | ≥6.5 | OkHttp 60 s connect | NSURLSession | OkHttp 5, 3 IPs | NSURL HE, 3 IPs | oracle |
//! |---|---|---|---|---|---|---|---|
//! | 5 | 7.41 | 5.41 | 7.41 | 5.41 | 7.41 | 5.41 | 5.41 |
//! | 10 | fail@10 | fail@10 | 15.41 | 11.41 | fail@10.5 | 11.41 | 10.41 |
//! | 15 | fail@10 | fail@10 | 15.41 | 19.41 | fail@10.5 | 19.41 | 15.41 |
//! | 20 | fail@10 | fail@10 | 31.41 | 35.41 | fail@10.5 | 20.41 | 20.41 |
//! | 25, 30 | fail@10 | fail@10 | 31.41 | 35.41 | fail@10.5 | 35.41 | R + 0.41 |
//! | 35 | fail@10 | fail@10 | fail@60 | 35.41 | fail@10.5 | 35.41 | 35.41 |
//! | 40 | fail@10 | fail@10 | fail@60 | fail@60 | fail@10.5 | fail@60 | 40.41 |

mod keep_alive;
mod nsurlsession;
mod okhttp2017;
mod okhttp5;
mod pooled;

pub use keep_alive::{keep_alive_post, KeepAliveApp};
pub use nsurlsession::NsUrlSession;
pub use okhttp2017::OkHttp2017;
pub use okhttp5::OkHttp5;
pub use pooled::{PeerClient, PeerConfig, PoolConfig, Stagger};

use stn_proto::Duration;

use crate::tcp::{SynSchedule, TcpStack};

/// Which Linux kernel generation an Android peer runs on (peers.md §3.1):
/// it fixes the SYN retransmission schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kernel {
    /// Linux before 6.5 (Android GKI up to android14-6.1): SYNs at 0, 1, 3, 7, 15, 31, 63 s.
    LinuxClassic,
    /// Linux 6.5 and later: SYNs at 0, 1, 2, 3, 4, 5, 7, 11, 19, 35, 67 s.
    Linux65,
}

impl Kernel {
    /// The client TCP stack of this kernel.
    pub fn stack(self) -> TcpStack {
        match self {
            Kernel::LinuxClassic => TcpStack::linux_classic(),
            Kernel::Linux65 => TcpStack::linux_6_5(),
        }
    }
}

/// SYNs a connection attempt has sent after running for `elapsed`: the
/// schedule's offsets strictly before `elapsed` (a SYN-ACK answering the SYN
/// at offset `s` arrives after `s`, and a timeout at exactly a SYN offset
/// cancels that SYN).
///
/// ```
/// use stn_sim::clients::peers::syns_sent;
/// use stn_sim::tcp::SynSchedule;
/// use stn_proto::Duration;
/// assert_eq!(syns_sent(&SynSchedule::LinuxClassic, Duration::from_secs(10)), 4);
/// assert_eq!(syns_sent(&SynSchedule::Xnu, Duration::from_secs(60)), 10);
/// assert_eq!(syns_sent(&SynSchedule::Xnu, Duration::ZERO), 1);
/// ```
pub fn syns_sent(schedule: &SynSchedule, elapsed: Duration) -> u32 {
    let n = (0..)
        .map_while(|i| schedule.syn_offset(i))
        .take_while(|o| *o < elapsed)
        .count();
    // The first SYN leaves at connect time, even for an attempt that ends at once.
    u32::try_from(n.max(1)).unwrap_or(u32::MAX)
}
