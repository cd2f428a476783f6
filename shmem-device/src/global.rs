//! Plain stores to global memory (`st.global`): what a kernel's epilogue writes C with.
//!
//! LLVM infers the global space for a kernel's pointer parameters, but a pointer that reached
//! the store through a struct (a `MatrixMut`, an epilogue's fields) stays generic, and its
//! stores are generic `st` (`ST.E` in SASS, resolved per access); these are `st.global`
//! (`STG.E`) whatever the path. The sm90 GEMM's epilogue lost its `st.global` that way when
//! its epilogue became a trait object's fields (docs/gemm.md). On the simulator they are
//! plain writes.
//!
//! ```
//! let mut x = [0u32; 2];
//! // SAFETY: `x` is valid for writes (on a GPU, the address must be global memory).
//! unsafe { rshmem_device::global::store(x.as_mut_ptr().add(1), 7u32) };
//! assert_eq!(x, [0, 7]);
//! ```

use crate::backend;

/// The element types [`store`] writes: 2, 4 or 8 bytes.
pub trait GlobalStore: Copy + sealed::Sealed {
    #[doc(hidden)]
    unsafe fn store_global(ptr: *mut Self, value: Self);
}

mod sealed {
    pub trait Sealed {}
}

/// `$t` stored as the bits `$bits` by `$f`.
macro_rules! global_store {
    ($($t:ty => $f:ident($bits:ty, $to:expr);)*) => {$(
        impl sealed::Sealed for $t {}
        impl GlobalStore for $t {
            #[inline(always)]
            unsafe fn store_global(ptr: *mut $t, value: $t) {
                let to: fn($t) -> $bits = $to;
                // SAFETY: the caller's contract (`store`'s); same size and alignment.
                unsafe { backend::$f(ptr.cast::<$bits>(), to(value)) }
            }
        }
    )*};
}
global_store! {
    u16 => store_global_u16(u16, |v| v);
    u32 => store_global_u32(u32, |v| v);
    u64 => store_global_u64(u64, |v| v);
    f32 => store_global_u32(u32, f32::to_bits);
}

/// Stores `value` at `ptr` with one `st.global` (a plain, weak store).
///
/// # Safety
///
/// `ptr` is valid for writes of a `T`, aligned, and points to global memory (a device
/// allocation or a peer's mapping of one; not shared or local memory); no access races with
/// the store.
#[inline(always)]
pub unsafe fn store<T: GlobalStore>(ptr: *mut T, value: T) {
    // SAFETY: forwarded from this function's contract.
    unsafe { T::store_global(ptr, value) }
}
