//! Renders the knob table of [`super::knobs`] as `docs/profiles.md`.

use core::fmt::Write as _;

use crate::ban::ReloadPolicy;
use crate::engine::{
    ChannelChoice, HedgePolicy, HttpRetry, NoNetworkPolicy, PoolConfig, ZombiePolicy,
};
use crate::heartbeat::RttScaledTimeout;
use crate::monitor::ReconnectBackoff;
use crate::net::NetworkKind;
use crate::race::{AbandonPolicy, AdaptiveStagger, LoserReports, ProbeFloor, QuietPolicy};
use crate::smart_heartbeat::SmartHeartbeatConfig;
use crate::time::Duration;
use crate::timeout::{AdaptiveConfig, DynamicTimeoutConfig, NetworkTimeouts};

/// One `mod` of the table.
pub(crate) struct Section {
    pub(crate) name: &'static str,
    pub(crate) doc: &'static str,
    pub(crate) knobs: Vec<Knob>,
}

/// One knob: its values under `Profile::ALL`, rendered.
pub(crate) struct Knob {
    pub(crate) name: &'static str,
    pub(crate) mars: &'static str,
    pub(crate) values: [String; 3],
    pub(crate) why: &'static str,
}

/// A value as a table cell.
pub(crate) trait Render {
    fn render(&self) -> String;
}

impl Render for Duration {
    fn render(&self) -> String {
        let nanos = self.as_nanos();
        if nanos == 0 {
            return "0".into();
        }
        if nanos % 1_000_000 != 0 {
            return format!("{nanos} ns");
        }
        let ms = nanos / 1_000_000;
        if ms < 1000 {
            format!("{ms} ms")
        } else if ms % 1000 != 0 {
            format!("{} s", ms as f64 / 1000.0)
        } else {
            let secs = ms / 1000;
            if secs % 3600 == 0 {
                format!("{} h", secs / 3600)
            } else if secs % 60 == 0 {
                format!("{} min", secs / 60)
            } else {
                format!("{secs} s")
            }
        }
    }
}

macro_rules! render_display {
    ($($t:ty),*) => {$(
        impl Render for $t {
            fn render(&self) -> String {
                self.to_string()
            }
        }
    )*};
}
render_display!(bool, u8, u16, u32, u64);

impl Render for usize {
    fn render(&self) -> String {
        if *self == usize::MAX {
            "unlimited".into()
        } else {
            self.to_string()
        }
    }
}

macro_rules! render_debug {
    ($($t:ty),*) => {$(
        impl Render for $t {
            fn render(&self) -> String {
                format!("`{self:?}`")
            }
        }
    )*};
}
render_debug!(
    LoserReports,
    ReloadPolicy,
    HttpRetry,
    ChannelChoice,
    NoNetworkPolicy,
    ZombiePolicy,
    NetworkKind
);

impl<T: Render> Render for Option<T> {
    fn render(&self) -> String {
        self.as_ref().map_or_else(|| "none".into(), Render::render)
    }
}

impl Render for [Duration; 5] {
    fn render(&self) -> String {
        let cells: Vec<String> = self.iter().map(Render::render).collect();
        cells.join(", ")
    }
}

impl Render for AdaptiveStagger {
    fn render(&self) -> String {
        format!(
            "clamp({}·rtt + {}, {}, {})",
            self.rtt_factor,
            self.margin.render(),
            self.min.render(),
            self.max.render()
        )
    }
}

impl Render for AbandonPolicy {
    fn render(&self) -> String {
        format!(
            "after max({}·rtt, {} + rtt + {}), rtt {} until measured, ≤ {} per race",
            self.rtt_factor,
            self.syn_rto.render(),
            self.slack.render(),
            self.assumed_rtt.render(),
            self.max_abandons
        )
    }
}

impl Render for QuietPolicy {
    fn render(&self) -> String {
        format!(
            "after {} of silence: the floor and one probe of {}",
            self.after.render(),
            self.probe_for.render()
        )
    }
}

impl Render for ProbeFloor {
    fn render(&self) -> String {
        let pass = match self.pass_gap {
            Some(gap) => format!(", one pass over the list, the next {} after", gap.render()),
            None => String::new(),
        };
        format!(
            "every {}, {} open{pass}",
            self.stagger.render(),
            self.max_open
        )
    }
}

impl Render for SmartHeartbeatConfig {
    fn render(&self) -> String {
        match self {
            SmartHeartbeatConfig::Fixed => "fixed `interval`".into(),
            SmartHeartbeatConfig::Mars(m) => format!(
                "Mars: {}–{}, +{} after {} answers, −{} after {} losses, {} first per connection",
                m.min.render(),
                m.max.saturating_sub(m.success_step).render(),
                m.heart_step.render(),
                m.base_success_count,
                (m.heart_step + m.success_step).render(),
                m.max_fail_count,
                m.stable_test_count,
            ),
            SmartHeartbeatConfig::Search(c) => format!(
                "search: first {}, {}–{}, steps max({}, ¼ of the proof) then {}, margin {}",
                (c.initial + c.coarse_step).render(),
                c.floor.render(),
                c.ceiling.render(),
                c.coarse_step.render(),
                c.fine_step.render(),
                c.margin.render(),
            ),
        }
    }
}

impl Render for RttScaledTimeout {
    fn render(&self) -> String {
        format!(
            "{}·rtt in [{}, {}]",
            self.multiplier,
            self.min.render(),
            self.max.render()
        )
    }
}

impl Render for ReconnectBackoff {
    fn render(&self) -> String {
        format!(
            "from {} ×{}, ≤ {} ‰ jitter, reset after {} up",
            self.first.render(),
            self.factor,
            self.max_jitter_permille,
            self.stable_after.render()
        )
    }
}

impl Render for HedgePolicy {
    fn render(&self) -> String {
        format!(
            "after {}·rtt in [{}, {}], ≤ {} hedges, requests ≤ {} B",
            self.rtt_factor,
            self.min_delay.render(),
            self.max_delay.render(),
            self.max_hedges,
            self.max_request_len
        )
    }
}

impl Render for NetworkTimeouts {
    fn render(&self) -> String {
        format!(
            "first packet {}..{} (excellent {}), ≥ {} B/s, packet gap {}, +{} per task",
            self.base_first_packet.render(),
            self.max_first_packet.render(),
            self.excellent_first_packet.render(),
            self.min_rate,
            self.packet_interval.render(),
            self.task_delay.render()
        )
    }
}

impl Render for DynamicTimeoutConfig {
    fn render(&self) -> String {
        if *self == DynamicTimeoutConfig::MARS {
            "`DynamicTimeoutConfig::MARS`".into()
        } else {
            format!("{self:?}")
        }
    }
}

impl Render for AdaptiveConfig {
    fn render(&self) -> String {
        if *self == AdaptiveConfig::STN {
            "`AdaptiveConfig::STN`".into()
        } else {
            format!("{self:?}")
        }
    }
}

impl Render for PoolConfig {
    fn render(&self) -> String {
        "on (`pool`)".into()
    }
}

/// The rustdoc lines of a knob or section as one paragraph per blank line.
fn prose(doc: &str) -> String {
    let mut out = String::new();
    for line in doc.lines().map(str::trim) {
        if line.is_empty() {
            out.push_str("\n\n");
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(line);
        }
    }
    out.trim().to_owned()
}

/// `docs/profiles.md`.
pub(crate) fn markdown(sections: &[Section]) -> String {
    let mut md = String::new();
    md.push_str(
        "<!-- Generated from stn-proto/src/profile/knobs.rs; do not edit. Regenerate with\n     \
         STN_WRITE_PROFILES_DOC=1 cargo test -p stn-proto --lib profile::tests -->\n\n",
    );
    md.push_str("# Profiles: every knob, side by side\n\n");
    md.push_str(
        "Every profile-dependent constant of every stn machine under the three profiles \
         (`stn_proto::Profile`): `mars-2017` (the constants Mars STN had when the 2017 \
         benchmark ran), `mars` (today's Mars) and `stn` (the default). The Mars column names \
         the constant or the behaviour in the `Tencent/mars` sources that the Mars profiles \
         follow (see `docs/mars-stn.md`); \"none\" means Mars has no such knob. Below each table: \
         why a profile differs. The values are defined once, in \
         `stn-proto/src/profile/knobs.rs`; a test renders this file from them.\n",
    );
    for section in sections {
        let _ = write!(md, "\n## `{}`\n\n{}\n\n", section.name, prose(section.doc));
        md.push_str("| knob | mars-2017 | mars | stn | Mars |\n|---|---|---|---|---|\n");
        for k in &section.knobs {
            let [m17, mars, stn] = &k.values;
            let _ = writeln!(md, "| `{}` | {m17} | {mars} | {stn} | {} |", k.name, k.mars);
        }
        let whys: Vec<&Knob> = section.knobs.iter().filter(|k| !k.why.is_empty()).collect();
        if !whys.is_empty() {
            md.push('\n');
            for k in whys {
                let _ = writeln!(md, "- `{}`: {}", k.name, prose(k.why));
            }
        }
    }
    md
}
