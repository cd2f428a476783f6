//! Row-major matrices in symmetric buffers ([`SymMatrix`], read; [`SymMatrixMut`], written):
//! a range with its rows, columns and leading dimension, checked to fit when made, passed
//! where a kernel takes a [`Matrix`] or [`MatrixMut`] parameter.
//!
//! ```no_run
//! # use rshmem_host::{LaunchConfig, Shmem};
//! # mod kernels { pub struct add; impl rshmem_device::Kernel for add {
//! #     const NAME: &'static str = "add";
//! #     type Args = (rshmem_device::matrix::Matrix<f32>, rshmem_device::matrix::MatrixMut<f32>);
//! #     unsafe fn run_sim(_: Self::Args) {} } }
//! # fn f(shmem: &Shmem, module: &rshmem_host::Module<'_>) -> rshmem_host::Result<()> {
//! let x = shmem.alloc_from(&[1.0f32; 64 * 32])?;
//! let mut y = shmem.alloc_zeroed::<f32>(64 * 48)?;
//! let cfg = LaunchConfig::new(64, 32);
//! // Adds x (64 x 32) into columns 16..48 of y (64 x 48): rows 48 apart.
//! // SAFETY: `add` touches the elements of its two views only.
//! unsafe {
//!     let block = y.range_mut(16..)?.matrix_mut_ld(64, 32, 48)?;
//!     module.launch::<kernels::add>(cfg, (x.matrix(64, 32)?, block))?
//! };
//! # Ok(()) }
//! ```

use crate::contract::{Error, Result};
use crate::sym_buffer::SymBuffer;
use crate::sym_range::{SymRange, SymRangeMut};
use bytemuck::Pod;
use rshmem_device::matrix::{Matrix, MatrixMut};
use rshmem_device::IntoKernelArg;

/// A `rows x cols` row-major matrix in a symmetric buffer, rows `ld` elements apart: what a
/// kernel's [`Matrix`] parameter takes. Made by [`SymRange::matrix`] / [`SymRange::matrix_ld`]
/// (or the same on a [`SymBuffer`]).
#[derive(Clone, Copy, Debug)]
pub struct SymMatrix<'a, T: Pod> {
    range: SymRange<'a, T>,
    dims: Dims,
}

/// A `rows x cols` row-major matrix in a symmetric buffer, borrowed exclusively: what a
/// kernel's [`MatrixMut`] (or [`Matrix`]) parameter takes. Made by
/// [`SymRangeMut::matrix_mut`] / [`SymRangeMut::matrix_mut_ld`] (or the same on a
/// [`SymBuffer`]); `&mut view` passes it again.
#[derive(Debug)]
pub struct SymMatrixMut<'a, T: Pod> {
    range: SymRangeMut<'a, T>,
    dims: Dims,
}

/// Rows, columns, leading dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dims {
    rows: u32,
    cols: u32,
    ld: u32,
}

impl Dims {
    /// The dimensions, if `ld >= cols` and a range of `len` elements holds them; else an
    /// [`Error::InvalidArgument`] naming `call`.
    pub(crate) fn check(
        call: &'static str,
        len: usize,
        rows: u32,
        cols: u32,
        ld: u32,
    ) -> Result<Self> {
        let bad = |message: String| Err(Error::InvalidArgument { call, message });
        if ld < cols {
            return bad(format!(
                "leading dimension {ld} is less than the {cols} columns: rows would overlap"
            ));
        }
        // The last row ends `cols` past its start; no row when there are none.
        let need = match rows {
            0 => 0,
            r => (r as usize - 1) * ld as usize + cols as usize,
        };
        if need > len {
            return bad(format!(
                "a {rows} x {cols} matrix with rows {ld} apart needs {need} elements, the range \
                 has {len}"
            ));
        }
        Ok(Self { rows, cols, ld })
    }
}

/// What both views answer alike.
macro_rules! matrix_accessors {
    ($($ty:ident),*) => {$(
        impl<T: Pod> $ty<'_, T> {
            /// Rows.
            pub fn rows(&self) -> u32 {
                self.dims.rows
            }

            /// Columns.
            pub fn cols(&self) -> u32 {
                self.dims.cols
            }

            /// Elements between the starts of two rows.
            pub fn ld(&self) -> u32 {
                self.dims.ld
            }

            /// The device view (for a kernel-argument struct of your own).
            pub fn as_matrix(&self) -> Matrix<T> {
                let Dims { rows, cols, ld } = self.dims;
                // SAFETY: `Dims::check` found every element inside the range, which lies in
                // its buffer; using the view while the buffer lives is the launch's contract.
                unsafe { Matrix::from_raw_parts(self.range.as_ptr(), rows, cols, ld) }
            }
        }
    )*};
}
matrix_accessors!(SymMatrix, SymMatrixMut);

impl<T: Pod> SymMatrixMut<'_, T> {
    /// The device view, written (for a kernel-argument struct of your own).
    pub fn as_matrix_mut(&mut self) -> MatrixMut<T> {
        let Dims { rows, cols, ld } = self.dims;
        // SAFETY: as in `as_matrix`; the exclusive borrow made the address mutable.
        unsafe { MatrixMut::from_raw_parts(self.range.as_mut_ptr(), rows, cols, ld) }
    }
}

impl<'a, T: Pod> SymRange<'a, T> {
    /// The range as a dense `rows x cols` matrix (rows `cols` apart); an
    /// [`Error::InvalidArgument`] if it is shorter than `rows * cols`.
    pub fn matrix(self, rows: u32, cols: u32) -> Result<SymMatrix<'a, T>> {
        self.matrix_ld(rows, cols, cols)
    }

    /// The range as a `rows x cols` matrix with rows `ld` apart (a block of a wider matrix);
    /// an [`Error::InvalidArgument`] if `ld < cols` or the range does not hold it.
    pub fn matrix_ld(self, rows: u32, cols: u32, ld: u32) -> Result<SymMatrix<'a, T>> {
        let dims = Dims::check("SymRange::matrix", self.len(), rows, cols, ld)?;
        Ok(SymMatrix { range: self, dims })
    }
}

impl<'a, T: Pod> SymRangeMut<'a, T> {
    /// The range as a dense `rows x cols` matrix, written; errors as [`SymRange::matrix`].
    pub fn matrix_mut(self, rows: u32, cols: u32) -> Result<SymMatrixMut<'a, T>> {
        self.matrix_mut_ld(rows, cols, cols)
    }

    /// The range as a `rows x cols` matrix with rows `ld` apart, written; errors as
    /// [`SymRange::matrix_ld`].
    pub fn matrix_mut_ld(self, rows: u32, cols: u32, ld: u32) -> Result<SymMatrixMut<'a, T>> {
        let dims = Dims::check("SymRangeMut::matrix_mut", self.len(), rows, cols, ld)?;
        Ok(SymMatrixMut { range: self, dims })
    }
}

impl<T: Pod> SymBuffer<'_, T> {
    /// The buffer's first `rows * cols` elements as a dense matrix: [`SymRange::matrix`].
    pub fn matrix(&self, rows: u32, cols: u32) -> Result<SymMatrix<'_, T>> {
        SymRange::from(self).matrix(rows, cols)
    }

    /// The buffer as a `rows x cols` matrix with rows `ld` apart: [`SymRange::matrix_ld`].
    pub fn matrix_ld(&self, rows: u32, cols: u32, ld: u32) -> Result<SymMatrix<'_, T>> {
        SymRange::from(self).matrix_ld(rows, cols, ld)
    }

    /// The buffer's first `rows * cols` elements as a dense matrix, written:
    /// [`SymRangeMut::matrix_mut`].
    pub fn matrix_mut(&mut self, rows: u32, cols: u32) -> Result<SymMatrixMut<'_, T>> {
        SymRangeMut::from(self).matrix_mut(rows, cols)
    }

    /// The buffer as a `rows x cols` matrix with rows `ld` apart, written:
    /// [`SymRangeMut::matrix_mut_ld`].
    pub fn matrix_mut_ld(&mut self, rows: u32, cols: u32, ld: u32) -> Result<SymMatrixMut<'_, T>> {
        SymRangeMut::from(self).matrix_mut_ld(rows, cols, ld)
    }
}

impl<T: Pod> IntoKernelArg<Matrix<T>> for SymMatrix<'_, T> {
    fn into_kernel_arg(self) -> Matrix<T> {
        self.as_matrix()
    }
}

impl<T: Pod> IntoKernelArg<Matrix<T>> for SymMatrixMut<'_, T> {
    fn into_kernel_arg(self) -> Matrix<T> {
        self.as_matrix()
    }
}

impl<T: Pod> IntoKernelArg<Matrix<T>> for &SymMatrixMut<'_, T> {
    fn into_kernel_arg(self) -> Matrix<T> {
        self.as_matrix()
    }
}

impl<T: Pod> IntoKernelArg<MatrixMut<T>> for SymMatrixMut<'_, T> {
    fn into_kernel_arg(mut self) -> MatrixMut<T> {
        self.as_matrix_mut()
    }
}

impl<T: Pod> IntoKernelArg<MatrixMut<T>> for &mut SymMatrixMut<'_, T> {
    fn into_kernel_arg(self) -> MatrixMut<T> {
        self.as_matrix_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::Dims;

    #[test]
    fn dims_fit_exactly_and_refuse_one_short() {
        // 3 rows of 4, 8 apart: the last row ends at 2 * 8 + 4 = 20.
        assert!(Dims::check("t", 20, 3, 4, 8).is_ok());
        let e = Dims::check("t", 19, 3, 4, 8).unwrap_err().to_string();
        assert!(e.contains("needs 20 elements, the range has 19"), "{e}");
        let e = Dims::check("t", 100, 3, 4, 3).unwrap_err().to_string();
        assert!(
            e.contains("leading dimension 3 is less than the 4 columns"),
            "{e}"
        );
        assert!(Dims::check("t", 0, 0, 4, 4).is_ok());
    }
}
