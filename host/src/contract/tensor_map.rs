//! What a tensor map for the bulk tensor copies of `rshmem_device::hopper::tma` describes
//! ([`TiledSpec`]), and the rules both backends check before encoding one ([`Checked`]): the
//! driver's documented rules for `cuTensorMapEncodeTiled`, plus the simulator's one on
//! swizzled boxes, so that a map one backend refuses is refused by the other with the same
//! message.

use super::error::{Error, Result};
pub use rshmem_device::hopper::{Swizzle, TmaType};

/// What a tensor map describes. Dimensions and boxes are innermost first.
#[derive(Clone, Copy, Debug)]
pub struct TiledSpec<'a> {
    /// Element type.
    pub ty: TmaType,
    /// Device address of element (0, 0, 0), 16-byte aligned (a symmetric buffer's `as_ptr`).
    pub global: *const u8,
    /// Extent of each dimension in elements: 2 or 3 of them, each 1..=2^32.
    pub dims: &'a [u64],
    /// Byte stride of dimensions 1.. (one fewer than `dims`): multiples of 16 below 2^40.
    /// Dimension 0 is dense.
    pub strides: &'a [u64],
    /// The box a copy moves, in elements (as many as `dims`), each 1..=256; the innermost
    /// extent times the element size a multiple of 16 bytes.
    pub box_dims: &'a [u32],
    /// How the box is laid out in shared memory: with a swizzle, the innermost box extent
    /// must be exactly the swizzle's span (32, 64 or 128 bytes).
    pub swizzle: Swizzle,
}

/// The spec's parameters, checked, with unused dimensions set to 1.
pub(crate) struct Checked {
    pub rank: u32,
    pub dims: [u64; 3],
    pub strides: [u64; 2],
    pub box_dims: [u32; 3],
}

fn bad(message: String) -> Error {
    Error::InvalidArgument {
        call: "TensorMap::tiled",
        message,
    }
}

impl TiledSpec<'_> {
    /// Checks the rules `cuTensorMapEncodeTiled` documents (and the simulator's one more, on
    /// swizzled boxes, which rshmem applies everywhere so that both backends accept the same
    /// maps).
    pub(crate) fn check(&self) -> Result<Checked> {
        let rank = self.dims.len();
        if !(2..=3).contains(&rank) {
            return Err(bad(format!(
                "{rank}-D tensors are not supported: give 2 or 3 dimensions"
            )));
        }
        if self.strides.len() != rank - 1 || self.box_dims.len() != rank {
            return Err(bad(format!(
                "a {rank}-D map needs {} strides and {rank} box extents; got {} and {}",
                rank - 1,
                self.strides.len(),
                self.box_dims.len()
            )));
        }
        if self.global.is_null() || self.global as usize % 16 != 0 {
            return Err(bad(format!(
                "global address {:?} is not 16-byte aligned",
                self.global
            )));
        }
        let e = self.ty.size() as u64;
        let mut c = Checked {
            rank: rank as u32,
            dims: [1; 3],
            strides: [0; 2],
            box_dims: [1; 3],
        };
        for (d, &n) in self.dims.iter().enumerate() {
            if n == 0 || n > 1 << 32 {
                return Err(bad(format!(
                    "dimension {d} has extent {n}: must be 1..=2^32"
                )));
            }
            c.dims[d] = n;
        }
        for (d, &s) in self.strides.iter().enumerate() {
            if s % 16 != 0 || s >= 1 << 40 {
                return Err(bad(format!(
                    "the stride of dimension {} is {s} bytes: must be a multiple of 16 below 2^40",
                    d + 1
                )));
            }
            c.strides[d] = s;
        }
        // Strides default past the last dimension so an unused dimension has stride 0 only
        // with extent 1.
        for (d, &b) in self.box_dims.iter().enumerate() {
            if b == 0 || b > 256 {
                return Err(bad(format!("box extent {d} is {b}: must be 1..=256")));
            }
            c.box_dims[d] = b;
        }
        let inner = c.box_dims[0] as u64 * e;
        if inner % 16 != 0 {
            return Err(bad(format!(
                "the box's innermost extent is {inner} bytes: must be a multiple of 16"
            )));
        }
        if self.swizzle != Swizzle::None && inner != self.swizzle.row_bytes() as u64 {
            return Err(bad(format!(
                "with {:?} swizzle the box's innermost extent must be exactly {} bytes ({} \
                 elements); it is {inner} (the simulator models swizzled boxes of whole rows)",
                self.swizzle,
                self.swizzle.row_bytes(),
                self.swizzle.row_bytes() as u64 / e
            )));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec<'a>(
        dims: &'a [u64],
        strides: &'a [u64],
        box_dims: &'a [u32],
        swizzle: Swizzle,
    ) -> TiledSpec<'a> {
        TiledSpec {
            ty: TmaType::Bf16,
            global: 256 as *const u8,
            dims,
            strides,
            box_dims,
            swizzle,
        }
    }

    #[test]
    fn checks_the_driver_rules() {
        let ok = spec(&[64, 100], &[128], &[64, 64], Swizzle::B128)
            .check()
            .unwrap();
        assert_eq!(
            (ok.rank, ok.dims, ok.box_dims),
            (2, [64, 100, 1], [64, 64, 1])
        );
        let err = |s: TiledSpec<'_>| s.check().err().unwrap().to_string();
        assert!(err(spec(&[64], &[], &[64], Swizzle::None)).contains("1-D"));
        assert!(err(spec(&[64, 8], &[120], &[64, 8], Swizzle::None)).contains("multiple of 16"));
        assert!(
            err(spec(&[64, 8], &[128], &[4, 8], Swizzle::None)).contains("innermost extent is 8")
        );
        assert!(err(spec(&[64, 8], &[128], &[64, 512], Swizzle::None)).contains("1..=256"));
        assert!(err(spec(&[64, 8], &[128], &[32, 8], Swizzle::B128)).contains("exactly 128 bytes"));
        assert!(err(spec(&[64, 8, 2], &[128], &[64, 8, 2], Swizzle::None)).contains("2 strides"));
        let mut s = spec(&[64, 8], &[128], &[64, 8], Swizzle::None);
        s.global = 8 as *const u8;
        assert!(err(s).contains("16-byte aligned"));
    }
}
