//! The builder's error type: each variant says what failed and what fixes it.

use std::path::PathBuf;

/// Everything a kernel build can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An architecture name the builder does not know.
    #[error("unknown GPU architecture {0:?}: use one of {list}", list = crate::Arch::ALL.iter().map(|a| a.name()).collect::<Vec<_>>().join(", "))]
    BadArch(String),

    /// A required rustup component is missing and could not be added.
    #[error("the Rust toolchain at {sysroot} lacks {missing}, needed to build kernels for nvptx64, and adding it failed{}. Run: {command}", .detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    MissingComponent {
        /// The toolchain's sysroot.
        sysroot: PathBuf,
        /// The missing components, e.g. `rust-src, llvm-tools`.
        missing: String,
        /// The exact command that adds them.
        command: String,
        /// Why the automatic attempt failed, if it was tried.
        detail: Option<String>,
    },

    /// The kernel crate did not compile; holds rustc's diagnostics.
    #[error("kernel crate {krate} failed to compile for {arch}:\n{diagnostics}")]
    Compile {
        /// The kernel crate's manifest.
        krate: PathBuf,
        /// The architecture being built.
        arch: String,
        /// rustc's rendered errors.
        diagnostics: String,
    },

    /// NVSHMEM's device library is needed (the kernels call NVSHMEM) but none was found or
    /// fetched.
    #[error("the kernels call NVSHMEM ({symbols}), but NVSHMEM's device library was not found: looked in {}; fetching nvidia-nvshmem-cu13=={version} failed: {fetch_error}. Set NVSHMEM_HOME to an NVSHMEM {version} install, `pip install nvidia-nvshmem-cu13=={version}`, or allow the download", searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NvshmemNotFound {
        /// Some of the NVSHMEM functions the kernels call.
        symbols: String,
        /// Places that were looked in.
        searched: Vec<PathBuf>,
        /// The pinned version that was to be fetched.
        version: String,
        /// Why fetching failed.
        fetch_error: String,
    },

    /// The linked PTX still references functions nobody defines.
    #[error("kernel crate {krate}: unresolved functions after linking: {symbols}. Functions called from kernels must be defined in Rust or in NVSHMEM's device library")]
    Unresolved {
        /// The kernel crate.
        krate: String,
        /// The unresolved symbols.
        symbols: String,
    },

    /// ptxas rejected the PTX.
    #[error("ptxas ({ptxas}) rejected {ptx} for {arch}:\n{message}")]
    Ptxas {
        /// The ptxas binary.
        ptxas: PathBuf,
        /// The PTX file.
        ptx: PathBuf,
        /// The architecture.
        arch: String,
        /// ptxas's output.
        message: String,
    },

    /// A tool (cargo, llvm-link, opt, llc, pip) failed.
    #[error("{tool} failed: {message}")]
    Tool {
        /// The command.
        tool: String,
        /// Its output or the reason.
        message: String,
    },

    /// A file operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },

    /// A required environment variable (normally set by cargo) is missing.
    #[error(
        "environment variable {0} is not set: call the builder from a build script, or set it"
    )]
    MissingEnv(&'static str),
}

/// Result alias for the builder.
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let context = context.into();
    move |source| Error::Io { context, source }
}
