//! Raw symbols of NVSHMEM's host library (`libnvshmem_host.so.3`, NVSHMEM 3.x), resolved once
//! at run time with libloading, and `#[repr(C)]` mirrors of the structs they take.
//!
//! Everything here mirrors the 3.4.5 headers exactly (`host/nvshmem_api.h`,
//! `host/nvshmemx_api.h`, `host/nvshmem_coll_api.h`, `host/nvshmemx_coll_api.h`,
//! `device_host/nvshmem_types.h`,
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
use std::ffi::{c_char, c_int, c_long, c_uint, c_void};
use std::mem::{align_of, size_of};
use std::path::Path;

/// `nvshmem_team_t` (`device_host/nvshmem_types.h`).
pub type nvshmem_team_t = i32;

/// `NVSHMEM_TEAM_WORLD` (`device_host/nvshmem_common.cuh`).
pub const NVSHMEM_TEAM_WORLD: nvshmem_team_t = 0;

/// `NVSHMEM_TEAM_INVALID`: what a split returns on the PEs it leaves out.
pub const NVSHMEM_TEAM_INVALID: nvshmem_team_t = -1;

/// `NVSHMEMX_INIT_WITH_UNIQUEID` (`enum flags`, `host/nvshmemx_api.h`).
pub const NVSHMEMX_INIT_WITH_UNIQUEID: c_uint = 1 << 3;

/// `NVSHMEMX_SUCCESS` (`enum nvshmemx_status`, `non_abi/nvshmemx_error.h`).
pub const NVSHMEMX_SUCCESS: c_int = 0;

/// `NVSHMEM_STATUS_IS_INITIALIZED` (`device_host_transport/nvshmem_constants.h`).
pub const NVSHMEM_STATUS_IS_INITIALIZED: c_int = 2;
/// `NVSHMEM_STATUS_LIMITED_MPG`: initialised with several PEs per GPU without MPS. NVSHMEM
/// then refuses host-side team splits and collectives other than `barrier_all` by printing
/// an error and exiting the process (`NVSHMEM_API_NOT_SUPPORTED_WITH_LIMITED_MPG_RUNS`).
pub const NVSHMEM_STATUS_LIMITED_MPG: c_int = 3;
/// `NVSHMEM_STATUS_FULL_MPG`: initialised, several PEs per GPU under MPS.
pub const NVSHMEM_STATUS_FULL_MPG: c_int = 4;

/// `UNIQUEID_PADDING` (`bootstrap_device_host/nvshmem_uniqueid.h`).
pub const UNIQUEID_PADDING: usize = 124;

/// `TEAM_CONFIG_V2_PADDING` (`device_host/nvshmem_types.h`).
pub const TEAM_CONFIG_V2_PADDING: usize = 48;

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

/// `nvshmem_team_config_v2` (= `nvshmem_team_config_t`): optional settings of a new team.
/// rshmem passes none (a NULL pointer with a zero mask: the new team inherits the parent's),
/// so the struct only gives the split prototypes their exact pointer type.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct nvshmem_team_config_v2 {
    pub version: c_int,
    pub num_contexts: c_int,
    /// `nvshmemx_team_uniqueid_t`.
    pub uniqueid: u64,
    pub padding: [c_char; TEAM_CONFIG_V2_PADDING],
}

/// `nvshmem_team_config_t`.
pub type nvshmem_team_config_t = nvshmem_team_config_v2;

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
const _: () = assert!(size_of::<nvshmem_team_config_v2>() == 64);
const _: () = assert!(std::mem::offset_of!(nvshmem_team_config_v2, uniqueid) == 8);

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
            /// The typed on-stream collectives, one table per entry of [`COLL_TYPES`], in
            /// that order.
            pub colls: Vec<TypedColls>,
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
                let colls = COLL_TYPES
                    .iter()
                    // SAFETY: as above; each table reads symbols of this library.
                    .map(|ty| unsafe { TypedColls::open(&lib, ty) })
                    .collect::<Result<_, _>>()?;
                Ok(Self { _lib: lib, $($name,)* colls })
            }
        }
    };
}

/// NVSHMEM's names of the element types rshmem's host collectives take (the `TYPENAME` of
/// `NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES` and of the reduce type lists).
pub const COLL_TYPES: [&str; 6] = ["int32", "uint32", "int64", "uint64", "float", "double"];

/// The reduction operators in the order of [`TypedColls::reduce`]: the order of
/// `rshmem_device::shmem::ReduceOp`'s variants.
pub const REDUCE_OPS: [&str; 7] = ["sum", "prod", "min", "max", "and", "or", "xor"];

/// `int nvshmemx_TYPENAME_fcollect_on_stream(nvshmem_team_t team, TYPE *dest, const TYPE *src,
/// size_t nelem, cudaStream_t stream)`, and the same shape for `alltoall`, `OP_reduce` and
/// `OP_reducescatter` (`nreduce` for `nelem`). The element pointers are declared `void *`:
/// the C ABI passes every data pointer alike, and one type serves every `TYPE`.
pub type CollFn =
    unsafe extern "C" fn(nvshmem_team_t, *mut c_void, *const c_void, usize, CUstream) -> c_int;

/// `int nvshmemx_TYPENAME_broadcast_on_stream(nvshmem_team_t team, TYPE *dest, const TYPE
/// *src, size_t nelem, int PE_root, cudaStream_t stream)`.
pub type BroadcastFn = unsafe extern "C" fn(
    nvshmem_team_t,
    *mut c_void,
    *const c_void,
    usize,
    c_int,
    CUstream,
) -> c_int;

/// The on-stream collectives of one element type (`host/nvshmemx_coll_api.h`).
pub struct TypedColls {
    /// The type's `TYPENAME`, one of [`COLL_TYPES`].
    pub ty: &'static str,
    pub fcollect: CollFn,
    pub alltoall: CollFn,
    pub broadcast: BroadcastFn,
    /// `nvshmemx_TYPENAME_OP_reduce_on_stream` per [`REDUCE_OPS`] entry; `None` where NVSHMEM
    /// has none (the bitwise operators of `float` and `double`).
    pub reduce: [Option<CollFn>; 7],
    /// `nvshmemx_TYPENAME_OP_reducescatter_on_stream`, likewise.
    pub reducescatter: [Option<CollFn>; 7],
}

impl TypedColls {
    /// Resolves the collectives of `ty`. The arithmetic reductions must exist; the bitwise
    /// ones exist for the integer types only.
    ///
    /// # Safety
    ///
    /// `lib` must be NVSHMEM 3.x's host library: the symbols are taken to have the types
    /// declared here.
    unsafe fn open(lib: &libloading::Library, ty: &'static str) -> Result<Self, libloading::Error> {
        let sym = |what: &str| {
            let name = format!("nvshmemx_{ty}_{what}_on_stream\0");
            // SAFETY: the caller vouches for the library; every symbol `sym` resolves
            // (fcollect, alltoall, OP_reduce, OP_reducescatter) has `CollFn`'s prototype; the
            // pointer stays valid while `lib` is loaded, which `Lib` guarantees by owning it.
            unsafe { lib.get::<CollFn>(name.as_bytes()).map(|f| *f) }
        };
        let reductions = |kind: &str| -> Result<[Option<CollFn>; 7], libloading::Error> {
            let mut table = [None; 7];
            for (i, (slot, op)) in table.iter_mut().zip(REDUCE_OPS).enumerate() {
                let found = sym(&format!("{op}_{kind}"));
                // Bitwise operators (index 4 on) are optional: floats have none.
                *slot = if i < 4 { Some(found?) } else { found.ok() };
            }
            Ok(table)
        };
        let broadcast = {
            let name = format!("nvshmemx_{ty}_broadcast_on_stream\0");
            // SAFETY: as in `sym`, with the broadcast prototype.
            unsafe { *lib.get::<BroadcastFn>(name.as_bytes())? }
        };
        Ok(Self {
            ty,
            fcollect: sym("fcollect")?,
            alltoall: sym("alltoall")?,
            broadcast,
            reduce: reductions("reduce")?,
            reducescatter: reductions("reducescatter")?,
        })
    }
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
    /// `int nvshmemx_barrier_on_stream(nvshmem_team_t team, cudaStream_t stream);`
    fn nvshmemx_barrier_on_stream(team: nvshmem_team_t, stream: CUstream) -> c_int;
    /// `void nvshmemx_putmem_on_stream(void *dest, const void *source, size_t bytes, int pe,
    /// cudaStream_t cstrm);`
    fn nvshmemx_putmem_on_stream(
        dest: *mut c_void,
        source: *const c_void,
        bytes: usize,
        pe: c_int,
        stream: CUstream,
    );
    /// `void nvshmemx_getmem_on_stream(void *dest, const void *source, size_t bytes, int pe,
    /// cudaStream_t cstrm);`
    fn nvshmemx_getmem_on_stream(
        dest: *mut c_void,
        source: *const c_void,
        bytes: usize,
        pe: c_int,
        stream: CUstream,
    );
    /// `void nvshmemx_putmem_signal_on_stream(void *dest, const void *source, size_t bytes,
    /// uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, cudaStream_t cstrm);`
    fn nvshmemx_putmem_signal_on_stream(
        dest: *mut c_void,
        source: *const c_void,
        bytes: usize,
        sig_addr: *mut u64,
        signal: u64,
        sig_op: c_int,
        pe: c_int,
        stream: CUstream,
    );
    /// `int nvshmem_team_my_pe(nvshmem_team_t team);`
    fn nvshmem_team_my_pe(team: nvshmem_team_t) -> c_int;
    /// `int nvshmem_team_n_pes(nvshmem_team_t team);`
    fn nvshmem_team_n_pes(team: nvshmem_team_t) -> c_int;
    /// `int nvshmem_team_translate_pe(nvshmem_team_t src_team, int src_pe,
    /// nvshmem_team_t dest_team);`
    fn nvshmem_team_translate_pe(
        src_team: nvshmem_team_t,
        src_pe: c_int,
        dest_team: nvshmem_team_t,
    ) -> c_int;
    /// `int nvshmem_team_split_strided(nvshmem_team_t parent_team, int PE_start, int PE_stride,
    /// int PE_size, const nvshmem_team_config_t *config, long config_mask,
    /// nvshmem_team_t *new_team);`
    fn nvshmem_team_split_strided(
        parent_team: nvshmem_team_t,
        pe_start: c_int,
        pe_stride: c_int,
        pe_size: c_int,
        config: *const nvshmem_team_config_t,
        config_mask: c_long,
        new_team: *mut nvshmem_team_t,
    ) -> c_int;
    /// `int nvshmem_team_split_2d(nvshmem_team_t parent_team, int xrange,
    /// const nvshmem_team_config_t *xaxis_config, long xaxis_mask, nvshmem_team_t *xaxis_team,
    /// const nvshmem_team_config_t *yaxis_config, long yaxis_mask, nvshmem_team_t *yaxis_team);`
    fn nvshmem_team_split_2d(
        parent_team: nvshmem_team_t,
        xrange: c_int,
        xaxis_config: *const nvshmem_team_config_t,
        xaxis_mask: c_long,
        xaxis_team: *mut nvshmem_team_t,
        yaxis_config: *const nvshmem_team_config_t,
        yaxis_mask: c_long,
        yaxis_team: *mut nvshmem_team_t,
    ) -> c_int;
    /// `void nvshmem_team_destroy(nvshmem_team_t team);`
    fn nvshmem_team_destroy(team: nvshmem_team_t);
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
