//! The persisted form of [`EndpointHistory`]: a small versioned binary format.
//!
//! All integers big-endian:
//!
//! ```text
//! magic     4  b"STNH"
//! version   1  1, or 2 with sections
//! networks  2  count, at most MAX_IMPORT_NETWORKS
//! per network:
//!   label_len 1, label (UTF-8, at most MAX_LABEL_LEN bytes)
//!   entries   2  count (at most MAX_IMPORT_ENTRIES over the whole file)
//!   per entry:
//!     family 1 (4 or 6), address 4 or 16, port 2,
//!     history 8 (bit 0 newest result, 1 = failure),
//!     last_seen 8 (wall-clock seconds of the last recorded result)
//! version 2 only:
//!   sections 1  count, at most MAX_SECTIONS
//!   per section: kind 1, length 4, bytes (kind 1: the engine's heartbeat
//!   records; kinds a reader does not know are skipped)
//! checksum  4  FNV-1a 32 of every byte before it
//! ```
//!
//! Version 1 files (no sections) are still read; `EndpointHistory::export`
//! writes version 1, the engine's export version 2.
//!
//! Only the 64-result history and the time it was last updated are kept, as in
//! Mars: failure times are not, so imported history orders candidates but
//! cannot ban by itself.

use std::collections::BTreeMap;

use super::history::Saved;
use super::EndpointHistory;
use crate::net::{IpAddr, SocketAddr};
use crate::time::{Duration, Instant};

const MAGIC: [u8; 4] = *b"STNH";
const VERSION: u8 = 1;
const VERSION_WITH_SECTIONS: u8 = 2;
/// Most sections a version-2 file holds.
const MAX_SECTIONS: usize = 8;
/// The section kind of the smart heartbeat's per-network records.
pub(crate) const SECTION_HEARTBEAT: u8 = 1;

/// Most networks an import accepts (an export writes at most this many).
pub(crate) const MAX_IMPORT_NETWORKS: usize = 64;
/// Most entries, over all networks, an import accepts (an export writes at
/// most this many).
pub(crate) const MAX_IMPORT_ENTRIES: usize = 16_384;
/// Longest network label that is persisted, in bytes; networks with longer
/// labels are left out of an export.
pub(crate) const MAX_LABEL_LEN: usize = 255;

/// Why [`EndpointHistory::import`] rejected its input. The history is left
/// unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// The input ended in the middle of a field.
    #[error("history data truncated")]
    Truncated,
    /// The input does not start with the format's magic bytes.
    #[error("not stn endpoint history (bad magic)")]
    BadMagic,
    /// A format version this build does not read.
    #[error("unsupported history format version {0}")]
    UnsupportedVersion(u8),
    /// More networks than `MAX_IMPORT_NETWORKS`.
    #[error("too many networks in history ({0})")]
    TooManyNetworks(usize),
    /// More entries than `MAX_IMPORT_ENTRIES`.
    #[error("too many entries in history (more than {MAX_IMPORT_ENTRIES})")]
    TooManyEntries,
    /// A network label that is not UTF-8.
    #[error("network label is not UTF-8")]
    BadLabel,
    /// An address family byte other than 4 or 6.
    #[error("bad address family {0}")]
    BadFamily(u8),
    /// The checksum does not match the content.
    #[error("history checksum mismatch")]
    Checksum,
    /// Bytes left over between the last entry and the checksum.
    #[error("{0} unexpected bytes after history data")]
    TrailingBytes(usize),
    /// A section (version 2) whose content does not parse (its kind; the
    /// heartbeat records are kind 1), or more sections than a file holds
    /// (kind 0).
    #[error("history section {0} is malformed")]
    BadSection(u8),
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
pub(super) fn checksum_for_tests(bytes: &[u8]) -> u32 {
    fnv1a(bytes)
}

/// A bounds-checked reader: every read either succeeds or reports truncation.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ImportError> {
        if self.bytes.len() < n {
            return Err(ImportError::Truncated);
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], ImportError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, ImportError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, ImportError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, ImportError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, ImportError> {
        Ok(u64::from_be_bytes(self.array()?))
    }
}

/// Each network's entries: address, history, last-seen wall-clock seconds.
pub(crate) type Parsed = Vec<(String, Vec<(SocketAddr, u64, u64)>)>;

/// A parsed file: the networks' entries and the sections, by kind.
pub(crate) struct ParsedFile {
    pub(crate) networks: Parsed,
    pub(crate) sections: Vec<(u8, Vec<u8>)>,
}

/// Parses and validates a file of either version; nothing is applied.
pub(crate) fn parse(bytes: &[u8]) -> Result<ParsedFile, ImportError> {
    let mut r = Reader { bytes };
    if r.array::<4>()? != MAGIC {
        return Err(ImportError::BadMagic);
    }
    let version = r.u8()?;
    if version != VERSION && version != VERSION_WITH_SECTIONS {
        return Err(ImportError::UnsupportedVersion(version));
    }
    // Verify the checksum before trusting any count in the body.
    let Some(body_len) = bytes.len().checked_sub(4).filter(|n| *n >= 5) else {
        return Err(ImportError::Truncated);
    };
    let (body, tail) = bytes.split_at(body_len);
    if u32::from_be_bytes([tail[0], tail[1], tail[2], tail[3]]) != fnv1a(body) {
        return Err(ImportError::Checksum);
    }
    let mut r = Reader { bytes: &body[5..] };
    let networks = usize::from(r.u16()?);
    if networks > MAX_IMPORT_NETWORKS {
        return Err(ImportError::TooManyNetworks(networks));
    }
    let mut total = 0usize;
    let mut out = Vec::with_capacity(networks);
    for _ in 0..networks {
        let len = usize::from(r.u8()?);
        let label = core::str::from_utf8(r.take(len)?).map_err(|_| ImportError::BadLabel)?;
        let count = usize::from(r.u16()?);
        total += count;
        if total > MAX_IMPORT_ENTRIES {
            return Err(ImportError::TooManyEntries);
        }
        // An entry takes at least 23 bytes: don't reserve for a lying count.
        let mut entries = Vec::with_capacity(count.min(r.bytes.len() / 23));
        for _ in 0..count {
            let ip = match r.u8()? {
                4 => IpAddr::from(r.array::<4>()?),
                6 => IpAddr::from(r.array::<16>()?),
                other => return Err(ImportError::BadFamily(other)),
            };
            let port = r.u16()?;
            let history = r.u64()?;
            let last_seen = r.u64()?;
            entries.push((SocketAddr::new(ip, port), history, last_seen));
        }
        out.push((label.to_owned(), entries));
    }
    let mut sections = Vec::new();
    if version == VERSION_WITH_SECTIONS {
        let count = usize::from(r.u8()?);
        if count > MAX_SECTIONS {
            return Err(ImportError::BadSection(0));
        }
        for _ in 0..count {
            let kind = r.u8()?;
            let len = usize::try_from(r.u32()?).map_err(|_| ImportError::Truncated)?;
            sections.push((kind, r.take(len)?.to_vec()));
        }
    }
    if !r.bytes.is_empty() {
        return Err(ImportError::TrailingBytes(r.bytes.len()));
    }
    Ok(ParsedFile {
        networks: out,
        sections,
    })
}

impl EndpointHistory {
    /// Serialises the history of every network (the current one included) for
    /// storage, dropping entries older than
    /// [`history_expiry`](super::BanConfig::history_expiry).
    ///
    /// `wall_clock_secs` is the wall-clock time (e.g. Unix seconds) that
    /// corresponds to the latest `now` this history has been given; entry
    /// times are stored relative to it. Bans themselves are not persisted.
    /// The output is deterministic (networks and entries in sorted order).
    pub fn export(&self, wall_clock_secs: u64) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        self.write_networks(wall_clock_secs, &mut out);
        let checksum = fnv1a(&out);
        out.extend_from_slice(&checksum.to_be_bytes());
        out
    }

    /// [`export`](Self::export) with `sections` (kind, bytes) after the
    /// networks: the version-2 file the engine writes.
    pub(crate) fn export_with_sections(
        &self,
        wall_clock_secs: u64,
        sections: &[(u8, Vec<u8>)],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&MAGIC);
        out.push(VERSION_WITH_SECTIONS);
        self.write_networks(wall_clock_secs, &mut out);
        let sections = &sections[..sections.len().min(MAX_SECTIONS)];
        out.push(sections.len() as u8);
        for (kind, bytes) in sections {
            // Sections are small (the heartbeat's: 20 records); a length
            // beyond u32 would be cut, never mis-framed.
            let len = bytes.len().min(u32::MAX as usize);
            out.push(*kind);
            out.extend_from_slice(&(len as u32).to_be_bytes());
            out.extend_from_slice(&bytes[..len]);
        }
        let checksum = fnv1a(&out);
        out.extend_from_slice(&checksum.to_be_bytes());
        out
    }

    /// The networks' count and entries, as both versions write them.
    fn write_networks(&self, wall_clock_secs: u64, out: &mut Vec<u8>) {
        let latest = self.clock.latest();
        let expiry = self.config.history_expiry;
        let mut networks: Vec<(&str, Vec<(SocketAddr, Saved)>)> = Vec::new();
        let current = self.live.iter().map(|(addr, e)| {
            let s = Saved {
                history: e.history,
                last_seen: e.last_seen,
            };
            (*addr, s)
        });
        networks.push((&self.label, current.collect()));
        for (label, entries) in &self.saved {
            networks.push((label, entries.iter().map(|(a, s)| (*a, *s)).collect()));
        }
        networks.sort_by(|a, b| a.0.cmp(b.0));

        let count_at = out.len();
        out.extend_from_slice(&[0, 0]);
        let (mut written_networks, mut written_entries) = (0u16, 0usize);
        for (label, entries) in networks {
            let fresh: Vec<_> = entries
                .into_iter()
                .filter(|(_, s)| latest - s.last_seen < expiry)
                .take(MAX_IMPORT_ENTRIES - written_entries)
                .collect();
            if fresh.is_empty()
                || label.len() > MAX_LABEL_LEN
                || usize::from(written_networks) >= MAX_IMPORT_NETWORKS
            {
                continue;
            }
            written_networks += 1;
            written_entries += fresh.len();
            out.push(label.len() as u8);
            out.extend_from_slice(label.as_bytes());
            out.extend_from_slice(&(fresh.len() as u16).to_be_bytes());
            for (addr, s) in fresh {
                match addr.ip() {
                    IpAddr::V4(ip) => {
                        out.push(4);
                        out.extend_from_slice(&ip.octets());
                    }
                    IpAddr::V6(ip) => {
                        out.push(6);
                        out.extend_from_slice(&ip.octets());
                    }
                }
                out.extend_from_slice(&addr.port().to_be_bytes());
                out.extend_from_slice(&s.history.to_be_bytes());
                let age = (latest - s.last_seen).as_secs();
                out.extend_from_slice(&wall_clock_secs.saturating_sub(age).to_be_bytes());
            }
        }
        out[count_at..count_at + 2].copy_from_slice(&written_networks.to_be_bytes());
    }

    /// Loads history written by [`export`](Self::export).
    ///
    /// `wall_clock_secs` is the wall-clock time now and `now` the matching
    /// [`Instant`]. Entries older than
    /// [`history_expiry`](super::BanConfig::history_expiry), or stamped in the
    /// future (the clock went back; Mars drops these too), are skipped. Entries
    /// of the current network seed endpoints that have no record yet (as after
    /// a network switch: they order candidates but are not banned); other
    /// networks' entries are merged into the saved records, the more recently
    /// seen copy winning. Returns how many entries were accepted.
    ///
    /// The input is fully validated first: on error nothing changes. Parsing is
    /// bounded by `MAX_IMPORT_NETWORKS` and `MAX_IMPORT_ENTRIES` and never
    /// panics.
    pub fn import(
        &mut self,
        bytes: &[u8],
        wall_clock_secs: u64,
        now: Instant,
    ) -> Result<usize, ImportError> {
        let parsed = parse(bytes)?;
        Ok(self.apply_import(parsed.networks, wall_clock_secs, now))
    }

    /// Applies parsed networks (see [`import`](Self::import)).
    pub(crate) fn apply_import(
        &mut self,
        parsed: Parsed,
        wall_clock_secs: u64,
        now: Instant,
    ) -> usize {
        let now = self.clock.observe(now);
        let expiry_secs = self.config.history_expiry.as_secs();
        let mut accepted = 0;
        for (label, entries) in parsed {
            let mut merged: BTreeMap<SocketAddr, Saved> = BTreeMap::new();
            for (addr, history, seen_secs) in entries {
                if seen_secs > wall_clock_secs || wall_clock_secs - seen_secs >= expiry_secs {
                    continue;
                }
                let last_seen = now - Duration::from_secs(wall_clock_secs - seen_secs);
                let s = Saved { history, last_seen };
                let slot = merged.entry(addr).or_insert(s);
                if s.last_seen > slot.last_seen {
                    *slot = s;
                }
                accepted += 1;
            }
            if label == self.label {
                for (addr, s) in merged {
                    self.reload_entry(now, addr, s);
                }
            } else {
                let saved = self.saved.entry(label).or_default();
                for (addr, s) in merged {
                    let slot = saved.entry(addr).or_insert(s);
                    if s.last_seen > slot.last_seen {
                        *slot = s;
                    }
                }
            }
        }
        self.trim_saved(now);
        accepted
    }
}
