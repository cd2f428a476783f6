//! placeholder
pub use rshmem_host::*;
