//! Configuration profiles.
//!
//! Every machine's configuration has a constructor per profile
//! (`XConfig::for_profile(Profile::Mars2017)` …, all in `configs`), so the
//! engine can assemble a whole configuration from one choice. Each of them
//! takes its values from [`knobs`], the one place where every
//! profile-dependent constant is defined for all three profiles side by
//! side, with the Mars constant it follows and why stn differs;
//! `docs/profiles.md` is rendered from it (and a test checks that it still
//! is). The table sits above the machines: it imports their configuration
//! types, and they import nothing from here but [`Profile`] itself.

mod configs;
pub(crate) mod knobs;
#[cfg(test)]
mod render;
#[cfg(test)]
mod tests;

/// Which set of constants a machine runs with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Profile {
    /// The constants Mars STN had when the 2017 benchmark ran (4 s connect
    /// stagger, 3 in flight, 10 s per connect attempt, …).
    Mars2017,
    /// Today's Mars constants (2.5 s stagger since 2022, …).
    Mars,
    /// stn's own defaults: adaptive to the measured RTT and loss, documented
    /// where they differ from Mars and why.
    #[default]
    Stn,
}

impl Profile {
    /// Every profile, in a fixed order (for tests and reports).
    pub const ALL: [Profile; 3] = [Profile::Mars2017, Profile::Mars, Profile::Stn];

    /// A short stable name: `mars-2017`, `mars`, `stn`.
    pub const fn name(self) -> &'static str {
        match self {
            Profile::Mars2017 => "mars-2017",
            Profile::Mars => "mars",
            Profile::Stn => "stn",
        }
    }
}

impl core::fmt::Display for Profile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "mars-2017" | "mars_2017" | "mars2017" => Ok(Profile::Mars2017),
            "mars" => Ok(Profile::Mars),
            "stn" | "default" => Ok(Profile::Stn),
            _ => Err(UnknownProfile(s.to_owned())),
        }
    }
}

/// A profile name that is not one of `mars-2017`, `mars`, `stn`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown profile {0:?}: expected mars-2017, mars or stn")]
pub struct UnknownProfile(pub String);
