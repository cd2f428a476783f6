//! Raw symbols of NVSHMEM's host library (`libnvshmem_host.so.3`, NVSHMEM 3.x), resolved once
//! at run time with libloading, and `#[repr(C)]` mirrors of the structs they take.
//!
//! Everything here mirrors the 3.4.5 headers exactly (`host/nvshmem_api.h`,
//! `host/nvshmemx_api.h`, `host/nvshmem_coll_api.h`, `device_host/nvshmem_types.h`,
//! `bootstrap_device_host/nvshmem_uniqueid.h`); the const assertions below repeat the headers'
//! own `static_assert`s on the struct sizes.
//!
//! # Why `nvshmemx_hostlib_init_attr` and not `nvshmemi_init_thread`
//!
//! The headers' `nvshmem_init`, `nvshmemx_init_attr` and `nvshmem_finalize` are `static inline`
//! wrappers over `nvshmemi_init_thread(requested, &provided, flags, attr, version)` and
//! `nvshmemi_finalize()`. Those two are **not** exported by `libnvshmem_host.so.3`: they live in
//! the static `libnvshmem_device.a` (checked with `nm` on the 3.4.5 wheel), where they register
//! the device state of code linked through the CUDA runtime (`cudaGetSymbolAddress`). rshmem
//! links no CUDA runtime; its kernels reach NVSHMEM's device state through
//! `nvshmemx_cumodule_init`. The host library exports the entry points meant for exactly that
//! case, which NVSHMEM's own Python bindings use:
//!
//! * `nvshmemx_hostlib_init_attr(flags, attr)` = `nvshmemid_hostlib_init_attr(
//!   NVSHMEM_THREAD_SERIALIZED, &provided, flags, attr, <host library version>, NULL)`;
//! * `nvshmemx_hostlib_finalize()` = `nvshmemid_hostlib_finalize(NULL, NULL)`.
//!
//! The version argument of the inline wrappers is the version of the device library linked
//! into the program, which the host library checks for compatibility; with the hostlib entry
//! points that check happens per module in `nvshmemx_cumodule_init` (and rshmem checks first,
//! see `gpu::pe::check_version`). What the inline `nvshmemx_init_attr` also does — stamp the
//! attribute's version fields (`nvshmemx_init_init_attr_ver_only`) — is reproduced by
//! [`nvshmemx_init_attr_v1::new`], which builds `NVSHMEMX_INIT_ATTR_INITIALIZER`.

#![allow(non_camel_case_types)]

use cudarc::driver::sys::{CUmodule, CUstream};
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::mem::{align_of, size_of};
use std::path::Path;

/// `nvshmem_team_t` (`device_host/nvshmem_types.h`).
pub type nvshmem_team_t = i32;

/// `NVSHMEM_TEAM_WORLD` (`device_host/nvshmem_common.cuh`).
pub const NVSHMEM_TEAM_WORLD: nvshmem_team_t = 0;

/// `NVSHMEMX_INIT_WITH_UNIQUEID` (`enum flags`, `host/nvshmemx_api.h`).
pub const NVSHMEMX_INIT_WITH_UNIQUEID: c_uint = 1 << 3;

/// `NVSHMEMX_SUCCESS` (`enum nvshmemx_status`, `non_abi/nvshmemx_error.h`).
pub const NVSHMEMX_SUCCESS: c_int = 0;

/// `NVSHMEM_STATUS_IS_INITIALIZED` (`device_host_transport/nvshmem_constants.h`).
pub const NVSHMEM_STATUS_IS_INITIALIZED: c_int = 2;
/// `NVSHMEM_STATUS_FULL_MPG`: initialised, several PEs per GPU under MPS (after
/// `NVSHMEM_STATUS_LIMITED_MPG` = 3, several PEs per GPU without MPS).
pub const NVSHMEM_STATUS_FULL_MPG: c_int = 4;

/// `UNIQUEID_PADDING` (`bootstrap_device_host/nvshmem_uniqueid.h`).
pub const UNIQUEID_PADDING: usize = 124;

/// `INIT_ARGS_PADDING` (`device_host/nvshmem_types.h`).
pub const INIT_ARGS_PADDING: usize = 96;

/// `UNIQUEID_ARGS_INVALID`.
pub const UNIQUEID_ARGS_INVALID: c_int = -1;

/// The version word NVSHMEM's versioned structs start with: `(1 << 16) + sizeof(struct)`.
const fn struct_version<T>() -> c_int {
    (1 << 16) + size_of::<T>() as c_int
}

/// `nvshmemx_uniqueid_v1` (= `nvshmemx_uniqueid_t`): the opaque ID PE 0 hands to the others.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvshmemx_uniqueid_v1 {
    pub version: c_int,
    pub internal: [c_char; UNIQUEID_PADDING],
}

/// `nvshmemx_uniqueid_t`.
pub type nvshmemx_uniqueid_t = nvshmemx_uniqueid_v1;

impl nvshmemx_uniqueid_v1 {
    /// `NVSHMEMX_UNIQUEID_INITIALIZER`.
    pub const fn new() -> Self {
        Self {
            version: struct_version::<Self>(),
            internal: [0; UNIQUEID_PADDING],
        }
    }
}

// SAFETY: `#[repr(C)]` of plain integers with no padding (4 + 124 = 128 bytes, asserted
// below), so every bit pattern is valid and all bytes are initialised; this is what lets the
// ID travel between processes as bytes.
unsafe impl bytemuck::Zeroable for nvshmemx_uniqueid_v1 {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for nvshmemx_uniqueid_v1 {}

/// `nvshmemx_uniqueid_args_v1` (= `nvshmemx_uniqueid_args_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvshmemx_uniqueid_args_v1 {
    pub version: c_int,
    pub id: *mut nvshmemx_uniqueid_v1,
    pub myrank: c_int,
    pub nranks: c_int,
}

/// `nvshmemx_init_args_v1` (= `nvshmemx_init_args_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvshmemx_init_args_v1 {
    pub version: c_int,
    pub uid_args: nvshmemx_uniqueid_args_v1,
    pub content: [c_char; INIT_ARGS_PADDING],
}

/// `nvshmemx_init_attr_v1` (= `nvshmemx_init_attr_t`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvshmemx_init_attr_v1 {
    pub version: c_int,
    pub mpi_comm: *mut c_void,
    pub args: nvshmemx_init_args_v1,
}

/// `nvshmemx_init_attr_t`.
pub type nvshmemx_init_attr_t = nvshmemx_init_attr_v1;

impl nvshmemx_init_attr_v1 {
    /// `NVSHMEMX_INIT_ATTR_INITIALIZER`: every version field stamped (what the inline
    /// `nvshmemx_init_attr` does with `nvshmemx_init_init_attr_ver_only`), no MPI communicator,
    /// unique-ID arguments marked invalid until `nvshmemx_set_attr_uniqueid_args` fills them.
    pub const fn new() -> Self {
        Self {
            version: struct_version::<Self>(),
            mpi_comm: std::ptr::null_mut(),
            args: nvshmemx_init_args_v1 {
                version: struct_version::<nvshmemx_init_args_v1>(),
                uid_args: nvshmemx_uniqueid_args_v1 {
                    version: struct_version::<nvshmemx_uniqueid_args_v1>(),
                    id: std::ptr::null_mut(),
                    myrank: UNIQUEID_ARGS_INVALID,
                    nranks: UNIQUEID_ARGS_INVALID,
                },
                content: [0; INIT_ARGS_PADDING],
            },
        }
    }
}

// The headers' own static_asserts, plus the alignments the C layout implies on x86-64/aarch64.
const _: () = assert!(size_of::<nvshmemx_uniqueid_v1>() == 128);
const _: () = assert!(align_of::<nvshmemx_uniqueid_v1>() == 4);
const _: () = assert!(size_of::<nvshmemx_uniqueid_args_v1>() == 24);
const _: () = assert!(align_of::<nvshmemx_uniqueid_args_v1>() == 8);
const _: () = assert!(size_of::<nvshmemx_init_args_v1>() == 128);
const _: () = assert!(std::mem::offset_of!(nvshmemx_init_args_v1, uid_args) == 8);
const _: () = assert!(size_of::<nvshmemx_init_attr_v1>() == 144);
const _: () = assert!(std::mem::offset_of!(nvshmemx_init_attr_v1, args) == 16);
const _: () = assert!(align_of::<nvshmemx_init_attr_v1>() == 8);

/// Declares [`Lib`]: one field per exported function, all resolved when the library is opened
/// so that a missing symbol is one clear error at start-up rather than a crash later.
macro_rules! nvshmem_symbols {
    ($( $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?; )*) => {
        /// `libnvshmem_host.so.3`, opened, with the functions rshmem calls.
        ///
        /// Never unloaded: NVSHMEM registers `atexit` handlers and starts threads that point
        /// into the library, so it stays mapped until the process exits (callers keep it in a
        /// `static`).
        pub struct Lib {
            _lib: libloading::Library,
            $( $(#[$doc])* pub $name: unsafe extern "C" fn($($ty),*) $(-> $ret)?, )*
        }

        impl Lib {
            /// Opens the library at `path` (a file path, or a bare soname searched by the
            /// dynamic loader) and resolves every symbol.
            ///
            /// # Safety
            ///
            /// `path` must be an NVSHMEM 3.x host library: its initialisers run, and the
            /// symbols are taken to have the signatures declared here.
            pub unsafe fn open(path: &Path) -> Result<Self, libloading::Error> {
                // SAFETY: the caller vouches for the library; see above.
                let lib = unsafe { libloading::Library::new(path) }?;
                $(
                    // SAFETY: the type is the header's prototype of this symbol; the pointer
                    // is copied out but stays valid because `lib` is stored next to it.
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn($($ty),*) $(-> $ret)?>(
                            concat!(stringify!($name), "\0").as_bytes(),
                        )?
                    };
                )*
                Ok(Self { _lib: lib, $($name,)* })
            }
        }
    };
}

nvshmem_symbols! {
    /// `int nvshmemx_hostlib_init_attr(unsigned int flags, nvshmemx_init_attr_t *attr);`
    fn nvshmemx_hostlib_init_attr(flags: c_uint, attr: *mut nvshmemx_init_attr_t) -> c_int;
    /// `void nvshmemx_hostlib_finalize();`
    fn nvshmemx_hostlib_finalize();
    /// `int nvshmemx_init_status();`
    fn nvshmemx_init_status() -> c_int;
    /// `int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *uniqueid);`
    fn nvshmemx_get_uniqueid(uniqueid: *mut nvshmemx_uniqueid_t) -> c_int;
    /// `int nvshmemx_set_attr_uniqueid_args(const int myrank, const int nranks,
    /// const nvshmemx_uniqueid_t *uniqueid, nvshmemx_init_attr_t *attr);`
    fn nvshmemx_set_attr_uniqueid_args(
        myrank: c_int,
        nranks: c_int,
        uniqueid: *const nvshmemx_uniqueid_t,
        attr: *mut nvshmemx_init_attr_t,
    ) -> c_int;
    /// `int nvshmem_my_pe();`
    fn nvshmem_my_pe() -> c_int;
    /// `int nvshmem_n_pes();`
    fn nvshmem_n_pes() -> c_int;
    /// `void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch);`
    fn nvshmemx_vendor_get_version_info(major: *mut c_int, minor: *mut c_int, patch: *mut c_int);
    /// `void *nvshmem_malloc(size_t size);`
    fn nvshmem_malloc(size: usize) -> *mut c_void;
    /// `void nvshmem_free(void *ptr);`
    fn nvshmem_free(ptr: *mut c_void);
    /// `void nvshmem_barrier_all();`
    fn nvshmem_barrier_all();
    /// `void *nvshmem_ptr(const void *dest, int pe);`
    fn nvshmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void;
    /// `int nvshmem_uint64_fcollect(nvshmem_team_t team, uint64_t *dest, const uint64_t *src,
    /// size_t nelem);`
    fn nvshmem_uint64_fcollect(
        team: nvshmem_team_t,
        dest: *mut u64,
        src: *const u64,
        nelem: usize,
    ) -> c_int;
    /// `int nvshmemx_cumodule_init(CUmodule module);`
    fn nvshmemx_cumodule_init(module: CUmodule) -> c_int;
    /// `int nvshmemx_cumodule_finalize(CUmodule module);`
    fn nvshmemx_cumodule_finalize(module: CUmodule) -> c_int;
    /// `void nvshmemx_barrier_all_on_stream(cudaStream_t stream);`
    fn nvshmemx_barrier_all_on_stream(stream: CUstream);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initializers_match_the_headers() {
        let attr = nvshmemx_init_attr_v1::new();
        assert_eq!(attr.version, (1 << 16) + 144);
        assert_eq!(attr.args.version, (1 << 16) + 128);
        assert_eq!(attr.args.uid_args.version, (1 << 16) + 24);
        assert_eq!(attr.args.uid_args.myrank, -1);
        assert_eq!(attr.args.uid_args.nranks, -1);
        assert!(attr.mpi_comm.is_null() && attr.args.uid_args.id.is_null());
        assert_eq!(nvshmemx_uniqueid_v1::new().version, (1 << 16) + 128);
    }

    #[test]
    fn opening_a_missing_library_is_an_error_not_a_crash() {
        // SAFETY: the path does not exist, so nothing is loaded.
        let err = unsafe { Lib::open(Path::new("/nonexistent/libnvshmem_host.so.3")) };
        assert!(err.is_err());
    }
}
