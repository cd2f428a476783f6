//! What a GEMM computes ([`GemmShape`], [`BLayout`]), which kernel may run it
//! ([`Kernel`], [`GemmOptions`]), and the checks of a shape against its buffers.
//!
//! ```
//! use rshmem_ops::{BLayout, GemmShape};
//! let shape = GemmShape::new(67, 45, 40, BLayout::NK);
//! assert_eq!((shape.a_len(), shape.b_len(), shape.c_len()), (67 * 40, 45 * 40, 67 * 45));
//! // k must be a multiple of 8; the error names the shape:
//! let e = GemmShape::new(8, 8, 12, BLayout::NK).check(96, 96, 64).unwrap_err();
//! assert!(e.to_string().contains("k = 12"), "{e}");
//! ```

use rshmem_host::{DeviceRange, Error, Pod, Result};
use std::mem::size_of;

/// How B is laid out in memory. A is always M x K row-major and C M x N row-major (rows `k`
/// and `n` elements apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BLayout {
    /// B is N x K row-major (K-major, "B transposed"): `C = A · Bᵀ`, as `torch.matmul(a,
    /// b.T)` with a weight stored `out_features x in_features`.
    NK,
    /// B is K x N row-major: `C = A · B`.
    KN,
}

/// `C (m x n) = A (m x k) · B`, B as [`BLayout`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    /// Rows of A and C.
    pub m: u32,
    /// Columns of C (rows of B for [`BLayout::NK`]).
    pub n: u32,
    /// The reduction: columns of A; a multiple of 8.
    pub k: u32,
    /// B's layout.
    pub b_layout: BLayout,
}

/// Which kernel runs a GEMM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// The sm90 kernel on an sm_90 GPU (and the simulator), the sm80 kernel on other GPUs
    /// from sm_80 on; both take both layouts.
    #[default]
    Auto,
    /// The Hopper kernel (TMA + `wgmma`, warp-specialised, persistent): sm_90 only, B N x K.
    Sm90,
    /// The Ampere kernel (`cp.async` + `mma.sync`): any GPU from sm_80 on, both layouts.
    Sm80,
}

/// Options of [`Ops::gemm_with`](crate::Ops::gemm_with).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GemmOptions {
    /// The kernel; [`Kernel::Auto`] unless a test or benchmark forces one.
    pub kernel: Kernel,
    /// Whether K is split over blocks (sm90 path; [`super::split_k`]): [`SplitK::Auto`]
    /// unless a test or benchmark forces it.
    ///
    /// [`SplitK::Auto`]: super::split_k::SplitK::Auto
    pub split_k: super::split_k::SplitK,
    /// The sm90 tile configuration ([`super::plan`]):
    /// [`GemmTile::Auto`](super::plan::GemmTile::Auto) (the cost model's
    /// choice) unless a test or benchmark forces one.
    pub tile: super::plan::GemmTile,
}

impl GemmOptions {
    /// `kernel`, K split as [`SplitK::Auto`](super::split_k::SplitK::Auto) decides, the tile
    /// as [`GemmTile::Auto`](super::plan::GemmTile::Auto) does.
    pub const fn kernel(kernel: Kernel) -> Self {
        Self {
            kernel,
            split_k: super::split_k::SplitK::Auto,
            tile: super::plan::GemmTile::Auto,
        }
    }

    /// These options with the tile configuration `tile`.
    pub const fn tile(self, tile: super::plan::GemmTile) -> Self {
        Self { tile, ..self }
    }

    /// These options with K split as `split_k` says.
    pub const fn split_k(self, split_k: super::split_k::SplitK) -> Self {
        Self { split_k, ..self }
    }
}

/// The call GEMM errors name.
pub(crate) const CALL: &str = "Ops::gemm";

impl GemmShape {
    /// The shape `m x n x k` with B laid out as `b_layout`.
    pub const fn new(m: u32, n: u32, k: u32, b_layout: BLayout) -> Self {
        Self { m, n, k, b_layout }
    }

    /// Elements A needs: `m * k`.
    pub const fn a_len(&self) -> usize {
        self.m as usize * self.k as usize
    }

    /// Elements B needs: `n * k`, either layout.
    pub const fn b_len(&self) -> usize {
        self.n as usize * self.k as usize
    }

    /// Elements C needs: `m * n`.
    pub const fn c_len(&self) -> usize {
        self.m as usize * self.n as usize
    }

    /// B's rows and columns as laid out: `(n, k)` for [`BLayout::NK`], `(k, n)` for
    /// [`BLayout::KN`].
    pub const fn b_dims(&self) -> (u32, u32) {
        match self.b_layout {
            BLayout::NK => (self.n, self.k),
            BLayout::KN => (self.k, self.n),
        }
    }

    /// Floating-point operations of the GEMM, `2 m n k`.
    pub const fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Checks the shape and that buffers of `a`, `b` and `c` elements hold it (longer is
    /// fine: the GEMM uses the first elements). Errors name the shape and the buffer.
    pub fn check(&self, a: usize, b: usize, c: usize) -> Result<()> {
        self.check_in(CALL, a, b, (c, self.m, "m x n"))
    }

    /// [`GemmShape::check`] for the op `call` (named by the errors), whose C needs
    /// `c.1 x n` elements (`c.2` names those dimensions) and has `c.0`.
    pub(crate) fn check_in(
        &self,
        call: &'static str,
        a: usize,
        b: usize,
        (c, c_rows, c_dims): (usize, u32, &'static str),
    ) -> Result<()> {
        let GemmShape { m, n, k, b_layout } = *self;
        let bad = |message: String| Error::InvalidArgument { call, message };
        if m == 0 || n == 0 || k == 0 {
            return Err(bad(format!(
                "m, n and k must all be > 0, got m x n x k = {m} x {n} x {k}"
            )));
        }
        if k % 8 != 0 {
            return Err(bad(format!(
                "k = {k} (m x n x k = {m} x {n} x {k}) is not a multiple of 8: the rows of A \
                 (and of B when N x K) are copied in 16-byte pieces (8 elements); pad K with \
                 zeros to {}",
                k.next_multiple_of(8)
            )));
        }
        let b_dims = match b_layout {
            BLayout::NK => "n x k",
            BLayout::KN => "k x n",
        };
        let c_need = c_rows as usize * n as usize;
        for (name, len, dims, (r, c), need) in [
            ("a", a, "m x k", (m, k), self.a_len()),
            ("b", b, b_dims, self.b_dims(), self.b_len()),
            ("c", c, c_dims, (c_rows, n), c_need),
        ] {
            if len < need {
                return Err(bad(format!(
                    "`{name}` has {len} elements, but {dims} = {r} x {c} = {need} are needed \
                     (shape m x n x k = {m} x {n} x {k}, B {b_layout:?})"
                )));
            }
        }
        if b_layout == BLayout::KN && n % 8 != 0 {
            return Err(bad(format!(
                "n = {n} (m x n x k = {m} x {n} x {k}) is not a multiple of 8, which B K x N \
                 (b_layout KN) needs: its rows are copied in 16-byte pieces (8 elements) by both \
                 kernels; pass B as N x K (any n), or pad N with zeros to {}",
                n.next_multiple_of(8)
            )));
        }
        Ok(())
    }
}

/// Where the GEMM kernels need an operand to start: A and B at a multiple of 16 bytes (both
/// kernels copy their rows in 16-byte pieces: TMA's tensor maps and `cp.async` take a 16-byte
/// aligned start), C at a multiple of two elements (the epilogues store pairs of values).
/// Buffers start aligned; a range of one may not.
pub(crate) struct Starts {
    /// A's and B's first elements' addresses, and the size of their element.
    pub(crate) a: u64,
    pub(crate) b: u64,
    pub(crate) in_size: usize,
    /// C's first element's address and the size of its element, where the call has a C.
    pub(crate) c: Option<(u64, usize)>,
}

impl Starts {
    /// The starts of `a`, `b` and, where the call has one, `c`.
    pub(crate) fn of<'a, In: Pod, Out: Pod + 'a>(
        a: impl Into<DeviceRange<'a, In>>,
        b: impl Into<DeviceRange<'a, In>>,
        c: Option<impl Into<DeviceRange<'a, Out>>>,
    ) -> Self {
        let (a, b, c) = (a.into(), b.into(), c.map(Into::into));
        Self {
            a: a.as_ptr() as u64,
            b: b.as_ptr() as u64,
            in_size: size_of::<In>(),
            c: c.map(|c| (c.as_ptr() as u64, size_of::<Out>())),
        }
    }

    /// Checks each operand's start; the error names the call, the operand and the alignment.
    pub(crate) fn check(&self, call: &'static str) -> Result<()> {
        let c = self.c.map(|(addr, size)| {
            (
                "c",
                addr,
                2 * size,
                size,
                "the epilogue stores C's values in pairs",
            )
        });
        let tma = "the kernels copy its rows in 16-byte pieces (TMA, cp.async)";
        let operands = [
            Some(("a", self.a, 16, self.in_size, tma)),
            Some(("b", self.b, 16, self.in_size, tma)),
            c,
        ];
        for (name, addr, align, size, why) in operands.into_iter().flatten() {
            if addr % align as u64 != 0 {
                return Err(Error::InvalidArgument {
                    call,
                    message: format!(
                        "`{name}` starts at address {addr:#x}, {} bytes past a multiple of \
                         {align}: {why}, so it must start {align}-byte aligned; start its range \
                         at a multiple of {} elements into its buffer",
                        addr % align as u64,
                        align / size
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(shape: GemmShape, a: usize, b: usize, c: usize) -> String {
        shape.check(a, b, c).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_the_shape_and_the_buffer() {
        let s = GemmShape::new(8, 4, 16, BLayout::NK);
        assert!(s.check(128, 64, 32).is_ok());
        let e = msg(s, 100, 64, 32);
        assert!(
            e.contains("`a` has 100 elements") && e.contains("8 x 16 = 128"),
            "{e}"
        );
        let e = msg(s, 128, 63, 32);
        assert!(
            e.contains("`b` has 63") && e.contains("n x k = 4 x 16 = 64"),
            "{e}"
        );
        let e = msg(GemmShape::new(8, 12, 16, BLayout::KN), 128, 192, 96);
        assert!(
            e.contains("n = 12") && e.contains("KN") && e.contains("pad N with zeros to 16"),
            "{e}"
        );
        let e = msg(GemmShape::new(8, 4, 16, BLayout::KN), 128, 63, 32);
        assert!(e.contains("k x n = 16 x 4 = 64"), "{e}");
        let e = msg(s, 128, 64, 31);
        assert!(
            e.contains("`c` has 31") && e.contains("m x n = 8 x 4 = 32"),
            "{e}"
        );
        let e = msg(GemmShape::new(8, 4, 12, BLayout::NK), 999, 999, 999);
        assert!(e.contains("k = 12") && e.contains("multiple of 8"), "{e}");
        let e = msg(GemmShape::new(0, 4, 16, BLayout::NK), 999, 999, 999);
        assert!(e.contains("> 0") && e.contains("0 x 4 x 16"), "{e}");
    }

    #[test]
    fn misaligned_starts_name_the_operand_and_the_alignment() {
        let starts = |a, b, c| Starts {
            a,
            b,
            in_size: 2,
            c: Some((c, 4)),
        };
        assert!(starts(0x1000, 0x2010, 0x3008).check(CALL).is_ok());
        let e = starts(0x1002, 0x2000, 0x3000).check(CALL).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("Ops::gemm") && e.contains("`a`") && e.contains("16-byte aligned"),
            "{e}"
        );
        assert!(e.contains("multiple of 8 elements"), "{e}");
        let e = starts(0x1000, 0x2008, 0x3000).check(CALL).unwrap_err();
        assert!(
            e.to_string()
                .contains("`b` starts at address 0x2008, 8 bytes"),
            "{e}"
        );
        let e = starts(0x1000, 0x2000, 0x3004).check("Ops::x").unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("Ops::x") && e.contains("`c`") && e.contains("8-byte aligned"),
            "{e}"
        );
        assert!(e.contains("multiple of 2 elements"), "{e}");
    }
}
