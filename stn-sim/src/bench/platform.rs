//! Which phone a run models: the client host's TCP stack and the peers
//! that go with it.

use crate::clients::peers::Kernel;
use crate::tcp::TcpStack;

/// Which phone the run models: its TCP stack and its peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Platform {
    /// xnu TCP; the peer is NSURLSession (AFNetworking).
    Ios,
    /// Linux before 6.5; the peer is OkHttp 2017.
    Android,
    /// Linux 6.5 and later (faster SYN retransmission); the peers are the
    /// Android ones on that kernel.
    Android65,
}

impl Platform {
    /// The two platforms of the published benchmark, in report order.
    pub const ALL: [Platform; 2] = [Platform::Ios, Platform::Android];

    /// Every platform: the published two and Android on Linux ≥ 6.5 (the
    /// loss and recommended-peer suites, and the matrix).
    pub const WITH_LINUX_6_5: [Platform; 3] =
        [Platform::Ios, Platform::Android, Platform::Android65];

    /// `ios` / `android` / `android-6.5`.
    pub fn name(self) -> &'static str {
        match self {
            Platform::Ios => "ios",
            Platform::Android => "android",
            Platform::Android65 => "android-6.5",
        }
    }

    /// The client host's TCP stack.
    pub fn stack(self) -> TcpStack {
        match self {
            Platform::Ios => TcpStack::xnu(),
            Platform::Android => TcpStack::linux_classic(),
            Platform::Android65 => TcpStack::linux_6_5(),
        }
    }

    /// The kernel of the Android peers (iOS: unused, Linux < 6.5).
    pub fn kernel(self) -> Kernel {
        match self {
            Platform::Android65 => Kernel::Linux65,
            Platform::Ios | Platform::Android => Kernel::LinuxClassic,
        }
    }
}
