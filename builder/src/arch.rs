//! The GPU architectures the builder targets: one table, [`Arch`], and its names.
//!
//! To add an architecture, add one line to the `arches!` table below: its variant, its
//! compute capability (`major * 10 + minor`, what the host matches against the device) and
//! the name LLVM and ptxas take (`-Ctarget-cpu`, `llc -mcpu`, `ptxas -arch`). An
//! architecture-specific variant such as `Sm90a = 90, "sm_90a"` shares its compute capability
//! with `Sm90` and differs in name; list it after the plain one, so that `"90"` still parses
//! to the plain one.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Declares [`Arch`], [`Arch::ALL`], [`Arch::sm`] and [`Arch::as_str`] from one table.
macro_rules! arches {
    ($($(#[$doc:meta])* $variant:ident = $sm:literal, $name:literal;)*) => {
        /// A GPU architecture to build for. Rust's nvptx backend needs sm_70 or newer.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum Arch {
            $($(#[$doc])* $variant,)*
        }

        impl Arch {
            /// Every architecture the builder knows.
            pub const ALL: &'static [Arch] = &[$(Arch::$variant),*];

            /// Compute capability as `major * 10 + minor`.
            pub const fn sm(self) -> u32 {
                match self {
                    $(Arch::$variant => $sm,)*
                }
            }

            /// The name LLVM and ptxas take: `sm_90`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Arch::$variant => $name,)*
                }
            }
        }
    };
}

arches! {
    /// Volta (V100).
    Sm70 = 70, "sm_70";
    /// Turing (T4).
    Sm75 = 75, "sm_75";
    /// Ampere (A100).
    Sm80 = 80, "sm_80";
    /// Ampere (A10, RTX 30).
    Sm86 = 86, "sm_86";
    /// Ada (L4, L40, RTX 40).
    Sm89 = 89, "sm_89";
    /// Hopper (H100, H200). The default.
    Sm90 = 90, "sm_90";
    /// Hopper with its architecture-specific features (`wgmma`, `setmaxnreg`): `sm_90a` code
    /// runs on compute capability 9.0 only, so pair it with a portable target (the loader
    /// prefers it on sm_90 and falls back to the other elsewhere).
    Sm90a = 90, "sm_90a";
    /// Blackwell (B200).
    Sm100 = 100, "sm_100";
    /// Blackwell (RTX 50).
    Sm120 = 120, "sm_120";
}

impl Arch {
    /// `sm_90` style name (the folder of its nested build, and its files' infix).
    pub fn name(self) -> String {
        self.as_str().to_string()
    }

    /// Whether the code uses architecture-specific features (the `a` suffix) and so runs
    /// only on exactly this compute capability.
    pub const fn arch_specific(self) -> bool {
        matches!(self.as_str().as_bytes().last(), Some(b'a'))
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Arch {
    type Err = Error;
    /// `sm_90`, `sm90` or `90` (and `sm_90a` style names, for the architectures that have one).
    fn from_str(s: &str) -> Result<Self> {
        let t = s.trim();
        let wanted = t
            .strip_prefix("sm_")
            .or_else(|| t.strip_prefix("sm"))
            .unwrap_or(t);
        Arch::ALL
            .iter()
            .copied()
            .find(|a| a.as_str().strip_prefix("sm_") == Some(wanted))
            .ok_or_else(|| Error::BadArch(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_arches() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::Sm90);
        assert_eq!("sm80".parse::<Arch>().unwrap(), Arch::Sm80);
        assert_eq!(" 86 ".parse::<Arch>().unwrap(), Arch::Sm86);
        assert_eq!("90".parse::<Arch>().unwrap(), Arch::Sm90);
        assert_eq!("sm_90a".parse::<Arch>().unwrap(), Arch::Sm90a);
        assert_eq!(Arch::Sm90a.to_string(), "sm_90a");
        assert!(Arch::Sm90a.arch_specific() && !Arch::Sm90.arch_specific());
        let err = "sm_42".parse::<Arch>().unwrap_err().to_string();
        assert!(err.contains("\"sm_42\"") && err.contains("sm_90"), "{err}");
    }

    #[test]
    fn names_agree_with_compute_capabilities() {
        for &arch in Arch::ALL {
            assert_eq!(arch.to_string(), arch.name());
            let digits = arch.as_str().strip_prefix("sm_").unwrap();
            assert!(digits.starts_with(&arch.sm().to_string()), "{arch}");
            assert_eq!(arch.as_str().parse::<Arch>().unwrap(), arch);
        }
    }
}
