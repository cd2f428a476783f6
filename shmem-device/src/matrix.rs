//! Typed matrix views for kernel parameters: a row-major matrix's address, rows, columns and
//! leading dimension (elements between rows) in one value, so a kernel takes
//! `c: MatrixMut<f32>` where it took `(c, ldc, m, n)`. [`Matrix`] is read, [`MatrixMut`]
//! written.
//!
//! The host makes them from symmetric buffers and ranges, checked against their length
//! (`a.matrix(m, k)?`, `c.matrix_mut(m, n)?`, `.matrix_ld(rows, cols, ld)?` for a strided
//! block), and passes them as kernel arguments; device code may also make one from raw parts.
//!
//! ```
//! use rshmem_device::matrix::MatrixMut;
//! let mut c = vec![0.0f32; 3 * 8];
//! // Columns 2..6 of a 3 x 8 matrix: rows 8 apart.
//! // SAFETY: every (r, col), r < 3, col < 4, lies at 2 + r * 8 + col < 24 elements of `c`.
//! let block = unsafe { MatrixMut::from_raw_parts(c.as_mut_ptr().add(2), 3, 4, 8) };
//! // SAFETY: (2, 3) is inside the view.
//! unsafe { block.write(2, 3, 1.0) };
//! assert_eq!((block.rows(), block.cols(), block.ld()), (3, 4, 8));
//! assert_eq!(c[2 + 2 * 8 + 3], 1.0);
//! ```

use crate::kernel::KernelArg;

/// Both views: `$ptr` is the address's type.
macro_rules! matrix_views {
    ($($(#[$doc:meta])* $name:ident: $ptr:ty;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug)]
        pub struct $name<T> {
            ptr: $ptr,
            rows: u32,
            cols: u32,
            ld: u32,
            // Explicit, so that no byte of a kernel argument is padding.
            _zero: u32,
        }

        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $name<T> {}

        // SAFETY: `#[repr(C)]`, an address and four u32s: 24 bytes, no padding, the same on
        // the host and nvptx64.
        unsafe impl<T: 'static> KernelArg for $name<T> {}

        impl<T> $name<T> {
            /// The `rows x cols` matrix at `ptr`, rows `ld` elements apart.
            ///
            /// # Safety
            ///
            /// `ld >= cols`, and every element `(r, c)` with `r < rows`, `c < cols` lies at
            /// `ptr + r * ld + c` inside one allocation, alive as long as the view is used.
            #[inline(always)]
            pub const unsafe fn from_raw_parts(ptr: $ptr, rows: u32, cols: u32, ld: u32) -> Self {
                Self { ptr, rows, cols, ld, _zero: 0 }
            }

            /// Rows.
            #[inline(always)]
            pub const fn rows(&self) -> u32 {
                self.rows
            }

            /// Columns.
            #[inline(always)]
            pub const fn cols(&self) -> u32 {
                self.cols
            }

            /// Elements between the starts of two rows (`>= cols`).
            #[inline(always)]
            pub const fn ld(&self) -> u32 {
                self.ld
            }

            /// The first element's address.
            #[inline(always)]
            pub const fn as_ptr(&self) -> $ptr {
                self.ptr
            }

            /// The address of row `r`'s first element (`r <= rows`; computed, not read).
            #[inline(always)]
            pub fn row(&self, r: u32) -> $ptr {
                self.ptr.wrapping_add(r as usize * self.ld as usize)
            }

            /// Reads element `(r, c)`.
            ///
            /// # Safety
            ///
            /// `r < rows`, `c < cols`; nobody writes the element meanwhile.
            #[inline(always)]
            pub unsafe fn read(&self, r: u32, c: u32) -> T
            where
                T: Copy,
            {
                // SAFETY: inside the view (the caller), which lies in its allocation.
                unsafe { *self.row(r).add(c as usize) }
            }
        }
    )*};
}

matrix_views! {
    /// A row-major matrix a kernel reads: `rows x cols` elements of `T`, rows `ld` apart.
    Matrix: *const T;
    /// A row-major matrix a kernel writes: `rows x cols` elements of `T`, rows `ld` apart.
    MatrixMut: *mut T;
}

impl<T> MatrixMut<T> {
    /// Writes element `(r, c)`.
    ///
    /// # Safety
    ///
    /// `r < rows`, `c < cols`; nobody else reads or writes the element meanwhile.
    #[inline(always)]
    pub unsafe fn write(&self, r: u32, c: u32, value: T) {
        // SAFETY: inside the view (the caller), which lies in its allocation.
        unsafe { *self.row(r).add(c as usize) = value }
    }

    /// The same elements, read-only.
    #[inline(always)]
    pub const fn as_matrix(&self) -> Matrix<T> {
        Matrix {
            ptr: self.ptr.cast_const(),
            rows: self.rows,
            cols: self.cols,
            ld: self.ld,
            _zero: 0,
        }
    }
}
