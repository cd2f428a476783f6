//! Shared-memory layouts for `wgmma` and TMA: the swizzle patterns and the 64-bit matrix
//! descriptor (PTX ISA, "Matrix Descriptor Format" of `wgmma`). The types are the crate's
//! Hopper vocabulary (`crate::contract::hopper`, where their layout rules are documented);
//! this module adds what needs the backend: a descriptor from a generic shared pointer.

pub use crate::contract::hopper::{SmemDesc, Swizzle};

impl SmemDesc {
    /// A K-major swizzled operand whose rows are `swizzle.row_bytes()` apart and whose 8-row
    /// groups are `sbo` apart, starting at generic shared pointer `p`.
    #[inline(always)]
    pub fn k_major<T>(p: *const T, swizzle: Swizzle, sbo: u32) -> Self {
        Self::new(super::shared_address(p), 16, sbo, swizzle)
    }
}
