//! The stored form of the per-network records: a section of the engine's
//! history file (`ban/persist.rs`, version 2). All integers big-endian:
//!
//! ```text
//! algorithm 1  0 fixed (no records), 1 Mars, 2 stn's search
//! records   1  count, at most MAX_RECORDS
//! per record:
//!   label_len 1, label (UTF-8)
//!   changed   8  wall-clock seconds of the last change (Mars modifyTime)
//!   Mars:   net_type 1, cur_heart_ms 4, heart_type 1, stable 1,
//!           fail_count 4, min_heart_fail_count 4
//!   search: good_ms 4, bad_ms 4 (0xFFFFFFFF: none), fails 1
//! ```

use super::mars::{HeartType, MarsRecord};
use super::records::Records;
use super::search::SearchRecord;
use super::MAX_RECORDS;
use crate::time::{Duration, Instant};

const FIXED: u8 = 0;
const MARS: u8 = 1;
const SEARCH: u8 = 2;
const NONE_MS: u32 = u32::MAX;

/// The section does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DecodeError;

/// One record as stored, before its time is placed on the engine's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stored {
    Mars {
        net_type: u8,
        cur_heart: Duration,
        heart_type: HeartType,
        stable: bool,
        fail_count: u32,
        min_heart_fail_count: u32,
    },
    Search {
        good: Option<Duration>,
        bad: Option<Duration>,
        fails: u32,
    },
}

/// Records read from a history file, validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct DecodedRecords {
    records: Vec<(String, u64, Stored)>,
}

/// Wall-clock seconds `secs` placed on the engine's clock, `wall` being
/// `now`; a time in the future reads as `now` (Mars clamps it too).
fn instant_of(secs: u64, wall: u64, now: Instant) -> Instant {
    now - Duration::from_secs(wall.saturating_sub(secs))
}

impl DecodedRecords {
    /// The Mars records, placed on the engine's clock.
    pub(crate) fn mars(self, wall: u64, now: Instant) -> Vec<(String, MarsRecord)> {
        self.records
            .into_iter()
            .filter_map(|(label, secs, s)| match s {
                Stored::Mars {
                    net_type,
                    cur_heart,
                    heart_type,
                    stable,
                    fail_count,
                    min_heart_fail_count,
                } => Some((
                    label,
                    MarsRecord {
                        net_type,
                        cur_heart,
                        heart_type,
                        stable,
                        last_modified: instant_of(secs, wall, now),
                        fail_count,
                        succ_count: 0,
                        min_heart_fail_count,
                    },
                )),
                Stored::Search { .. } => None,
            })
            .collect()
    }

    /// The search records, placed on the engine's clock.
    pub(crate) fn search(self, wall: u64, now: Instant) -> Vec<(String, SearchRecord)> {
        self.records
            .into_iter()
            .filter_map(|(label, secs, s)| match s {
                Stored::Search { good, bad, fails } => Some((
                    label,
                    SearchRecord {
                        good,
                        bad,
                        fails,
                        changed: instant_of(secs, wall, now),
                    },
                )),
                Stored::Mars { .. } => None,
            })
            .collect()
    }
}

fn secs_of(t: Instant, latest: Instant, wall: u64) -> u64 {
    wall.saturating_sub((latest - t).as_secs())
}

fn ms(d: Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(NONE_MS - 1)
}

fn opt_ms(d: Option<Duration>) -> u32 {
    d.map_or(NONE_MS, ms)
}

fn head(out: &mut Vec<u8>, algorithm: u8, count: usize) {
    out.push(algorithm);
    out.push(count.min(MAX_RECORDS) as u8);
}

/// Labels longer than a byte can count are left out.
fn label_fits(label: &str) -> bool {
    label.len() <= usize::from(u8::MAX)
}

fn label(out: &mut Vec<u8>, label: &str, changed: u64) {
    out.push(label.len() as u8);
    out.extend_from_slice(label.as_bytes());
    out.extend_from_slice(&changed.to_be_bytes());
}

/// No records (the fixed interval).
pub(crate) fn encode_none(out: &mut Vec<u8>) {
    head(out, FIXED, 0);
}

/// Mars's records.
pub(crate) fn encode_mars(
    records: &Records<MarsRecord>,
    latest: Instant,
    wall: u64,
    out: &mut Vec<u8>,
) {
    let fit: Vec<_> = records.iter().filter(|(l, _)| label_fits(l)).collect();
    head(out, MARS, fit.len());
    for (l, r) in fit.into_iter().take(MAX_RECORDS) {
        label(out, l, secs_of(r.last_modified, latest, wall));
        out.push(r.net_type);
        out.extend_from_slice(&ms(r.cur_heart).to_be_bytes());
        out.push(r.heart_type as u8);
        out.push(u8::from(r.stable));
        out.extend_from_slice(&r.fail_count.to_be_bytes());
        out.extend_from_slice(&r.min_heart_fail_count.to_be_bytes());
    }
}

/// The search's records.
pub(crate) fn encode_search(
    records: &Records<SearchRecord>,
    latest: Instant,
    wall: u64,
    out: &mut Vec<u8>,
) {
    let fit: Vec<_> = records.iter().filter(|(l, _)| label_fits(l)).collect();
    head(out, SEARCH, fit.len());
    for (l, r) in fit.into_iter().take(MAX_RECORDS) {
        label(out, l, secs_of(r.changed, latest, wall));
        out.extend_from_slice(&opt_ms(r.good).to_be_bytes());
        out.extend_from_slice(&opt_ms(r.bad).to_be_bytes());
        out.push(r.fails.min(u32::from(u8::MAX)) as u8);
    }
}

/// A bounds-checked reader.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError);
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    fn duration(&mut self) -> Result<Option<Duration>, DecodeError> {
        let v = self.u32()?;
        Ok((v != NONE_MS).then(|| Duration::from_millis(u64::from(v))))
    }
}

/// Parses a section written by the `encode_*` functions; never panics,
/// allocates at most [`MAX_RECORDS`] records.
pub(crate) fn decode(bytes: &[u8]) -> Result<DecodedRecords, DecodeError> {
    let mut r = Reader(bytes);
    let algorithm = r.u8()?;
    let count = usize::from(r.u8()?);
    if count > MAX_RECORDS || (algorithm == FIXED && count > 0) || algorithm > SEARCH {
        return Err(DecodeError);
    }
    let mut records = Vec::with_capacity(count);
    for _ in 0..count {
        let len = usize::from(r.u8()?);
        let label = core::str::from_utf8(r.take(len)?).map_err(|_| DecodeError)?;
        let changed = r.u64()?;
        let stored = if algorithm == MARS {
            let net_type = r.u8()?;
            let cur_heart = r.duration()?.ok_or(DecodeError)?;
            let heart_type = HeartType::from_u8(r.u8()?);
            let stable = match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(DecodeError),
            };
            Stored::Mars {
                net_type,
                cur_heart,
                heart_type,
                stable,
                fail_count: r.u32()?,
                min_heart_fail_count: r.u32()?,
            }
        } else {
            Stored::Search {
                good: r.duration()?,
                bad: r.duration()?,
                fails: u32::from(r.u8()?),
            }
        };
        records.push((label.to_owned(), changed, stored));
    }
    if !r.0.is_empty() {
        return Err(DecodeError);
    }
    Ok(DecodedRecords { records })
}
