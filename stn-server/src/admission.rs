//! Who may connect: the server-wide connection cap and the per-IP cap
//! ([`ServerConfig::max_connections`](super::ServerConfig::max_connections),
//! [`ServerConfig::max_connections_per_ip`](super::ServerConfig::max_connections_per_ip)),
//! counted over both links, and the rate-limited log lines that report
//! refusals without flooding the log.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::Shared;

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The server-wide cap.
    Total,
    /// The per-IP cap.
    PerIp,
}

/// Open connections, in total and by peer address.
#[derive(Debug, Default)]
pub(super) struct Admission {
    open: Mutex<Open>,
}

#[derive(Debug, Default)]
struct Open {
    total: usize,
    by_ip: BTreeMap<IpAddr, usize>,
}

impl Admission {
    fn lock(&self) -> MutexGuard<'_, Open> {
        // Every update is a couple of integer writes: a poisoned map is still
        // consistent.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connections open now (both links).
    pub(super) fn open(&self) -> usize {
        self.lock().total
    }
}

/// One admitted connection; leaves the counts when dropped.
#[derive(Debug)]
pub(super) struct Slot {
    shared: Arc<Shared>,
    ip: IpAddr,
}

impl Slot {
    /// Admits a connection from `ip` if both caps allow it.
    pub(super) fn admit(shared: &Arc<Shared>, ip: IpAddr) -> Result<Slot, Refusal> {
        let config = &shared.config;
        let mut open = shared.admission.lock();
        if open.total >= config.max_connections {
            return Err(Refusal::Total);
        }
        let from_ip = open.by_ip.entry(ip).or_insert(0);
        if *from_ip >= config.max_connections_per_ip {
            return Err(Refusal::PerIp);
        }
        *from_ip += 1;
        open.total += 1;
        Ok(Slot {
            shared: shared.clone(),
            ip,
        })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.shared.admission.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(n) = open.by_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.by_ip.remove(&self.ip);
            }
        }
    }
}

/// Lets a log line through at most once per period and counts the ones it
/// held back, so a flood of refusals or accept errors costs one line a
/// period.
#[derive(Debug)]
pub(super) struct RateLimitedLog {
    period: Duration,
    state: Mutex<(Option<Instant>, u64)>,
}

impl RateLimitedLog {
    pub(super) fn new(period: Duration) -> Self {
        RateLimitedLog {
            period,
            state: Mutex::new((None, 0)),
        }
    }

    /// `Some(n)`: log now, mentioning the `n` events suppressed since the
    /// last line; `None`: stay quiet (counted).
    pub(super) fn hit(&self) -> Option<u64> {
        let now = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let (last, suppressed) = &mut *state;
        match last {
            Some(at) if now.duration_since(*at) < self.period => {
                *suppressed += 1;
                None
            }
            _ => {
                *last = Some(now);
                Some(std::mem::take(suppressed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period() {
        let log = RateLimitedLog::new(Duration::from_secs(3600));
        assert_eq!(log.hit(), Some(0));
        for _ in 0..1000 {
            assert_eq!(log.hit(), None);
        }
        let log = RateLimitedLog::new(Duration::ZERO);
        assert_eq!(log.hit(), Some(0));
        assert_eq!(log.hit(), Some(0));
    }
}
