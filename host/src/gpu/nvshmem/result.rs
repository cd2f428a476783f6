//! Thin checked wrappers over [`super::sys`]: one function per NVSHMEM call, returning
//! [`Error::Nvshmem`] (with the usual cause as a hint) instead of a status code.
//!
//! Nothing above this module looks at raw NVSHMEM status codes.

use super::sys::{self, Lib};
use crate::contract::{Error, Result};
use cudarc::driver::sys::{CUmodule, CUstream};
use std::ffi::{c_int, c_void};

/// Turns a status into a result, attaching `hint` to failures.
fn check(call: &'static str, status: c_int, hint: &str) -> Result<()> {
    if status == sys::NVSHMEMX_SUCCESS {
        Ok(())
    } else {
        Err(Error::Nvshmem {
            call,
            status,
            hint: Some(hint.to_string()),
        })
    }
}

/// Hint shared by the calls that fail when NVSHMEM could not start (its own log says why).
const INIT_HINT: &str = "NVSHMEM printed its reason above; NVSHMEM_DEBUG=INFO shows more";

/// `nvshmemx_get_uniqueid`: a fresh unique ID (PE 0 only). Loads the UID bootstrap plugin.
pub fn get_uniqueid(lib: &Lib) -> Result<sys::nvshmemx_uniqueid_t> {
    let mut uid = sys::nvshmemx_uniqueid_t::new();
    // SAFETY: `uid` is a valid, initialised `nvshmemx_uniqueid_t` the call writes into.
    let status = unsafe { (lib.nvshmemx_get_uniqueid)(&mut uid) };
    check(
        "nvshmemx_get_uniqueid",
        status,
        "the UID bootstrap plugin (nvshmem_bootstrap_uid.so.3, next to libnvshmem_host.so.3; \
         NVSHMEM_BOOTSTRAP_UID_PLUGIN overrides it) failed to load or found no usable network \
         interface (set NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME, e.g. =lo on one node)",
    )?;
    Ok(uid)
}

/// `nvshmemx_set_attr_uniqueid_args` + `nvshmemx_hostlib_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID)`:
/// joins the job as PE `pe` of `npes`, on the CUDA context current on this thread.
///
/// Collective over all `npes` processes holding the same `uid`.
pub fn init_with_uniqueid(
    lib: &Lib,
    pe: usize,
    npes: usize,
    uid: &sys::nvshmemx_uniqueid_t,
) -> Result<()> {
    let rank = c_int::try_from(pe).map_err(|_| too_many_pes(npes))?;
    let nranks = c_int::try_from(npes).map_err(|_| too_many_pes(npes))?;
    let mut attr = sys::nvshmemx_init_attr_t::new();
    // SAFETY: `uid` and `attr` are valid; NVSHMEM stores the `uid` pointer in `attr`, and both
    // outlive the init call below, the only reader of that pointer.
    let status = unsafe { (lib.nvshmemx_set_attr_uniqueid_args)(rank, nranks, uid, &mut attr) };
    check("nvshmemx_set_attr_uniqueid_args", status, INIT_HINT)?;
    // SAFETY: `attr` was initialised as the header's initializer and filled in just above.
    let status =
        unsafe { (lib.nvshmemx_hostlib_init_attr)(sys::NVSHMEMX_INIT_WITH_UNIQUEID, &mut attr) };
    check(
        "nvshmemx_hostlib_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID)",
        status,
        "every PE must pass the same unique ID and its own rank; NVSHMEM printed its reason \
         above (NVSHMEM_DEBUG=INFO shows more)",
    )?;
    initialized(lib)
}

/// `nvshmemx_hostlib_init_attr(0, NULL)`: joins the job through the bootstrap that
/// `NVSHMEM_BOOTSTRAP` names (PMI, PMIx, MPI), as `nvshmem_init()` does.
pub fn init_with_bootstrap_env(lib: &Lib) -> Result<()> {
    // SAFETY: flags 0 with a NULL attribute is `nvshmem_init`'s own call.
    let status = unsafe { (lib.nvshmemx_hostlib_init_attr)(0, std::ptr::null_mut()) };
    check(
        "nvshmemx_hostlib_init_attr",
        status,
        "the bootstrap named by NVSHMEM_BOOTSTRAP (and NVSHMEM_BOOTSTRAP_PMI) must match the \
         launcher (srun --mpi=pmix, mpirun, ...); NVSHMEM printed its reason above",
    )?;
    initialized(lib)
}

/// Confirms that an init call really left NVSHMEM initialised (not merely bootstrapped).
fn initialized(lib: &Lib) -> Result<()> {
    // SAFETY: a query without arguments; valid at any time.
    let status = unsafe { (lib.nvshmemx_init_status)() };
    // Several PEs sharing one GPU initialise in a multi-process-per-GPU mode (limited without
    // MPS, full with it): initialised all the same.
    if (sys::NVSHMEM_STATUS_IS_INITIALIZED..=sys::NVSHMEM_STATUS_FULL_MPG).contains(&status) {
        Ok(())
    } else {
        Err(Error::Nvshmem {
            call: "nvshmemx_init_status",
            status,
            hint: Some(format!(
                "expected NVSHMEM_STATUS_IS_INITIALIZED ({}) or an MPG status after init; {INIT_HINT}",
                sys::NVSHMEM_STATUS_IS_INITIALIZED
            )),
        })
    }
}

fn too_many_pes(npes: usize) -> Error {
    Error::Launcher(format!("{npes} PEs do not fit NVSHMEM's int PE numbers"))
}

/// `nvshmemx_hostlib_finalize`: leaves the job. Collective.
///
/// # Safety
///
/// NVSHMEM must be initialised, every module registered with [`cumodule_init`] finalised, and
/// no symmetric memory used afterwards.
pub unsafe fn finalize(lib: &Lib) {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmemx_hostlib_finalize)() }
}

/// `nvshmem_my_pe` and `nvshmem_n_pes`, checked to be PE numbers.
pub fn my_pe_n_pes(lib: &Lib) -> Result<(usize, usize)> {
    // SAFETY: queries without arguments, valid after init.
    let (pe, npes) = unsafe { ((lib.nvshmem_my_pe)(), (lib.nvshmem_n_pes)()) };
    match (usize::try_from(pe), usize::try_from(npes)) {
        (Ok(pe), Ok(npes)) if pe < npes => Ok((pe, npes)),
        _ => Err(Error::Nvshmem {
            call: "nvshmem_my_pe/nvshmem_n_pes",
            status: pe,
            hint: Some(format!("got PE {pe} of {npes}: NVSHMEM is not initialised")),
        }),
    }
}

/// `nvshmemx_vendor_get_version_info`: the host library's `(major, minor, patch)`.
pub fn vendor_version(lib: &Lib) -> (u32, u32, u32) {
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: three valid out-pointers; the call only reports compiled-in constants.
    unsafe { (lib.nvshmemx_vendor_get_version_info)(&mut major, &mut minor, &mut patch) };
    let v = |x: c_int| u32::try_from(x).unwrap_or(0);
    (v(major), v(minor), v(patch))
}

/// `nvshmem_malloc`: `bytes` on the symmetric heap, or `None` if NVSHMEM returned NULL.
/// Collective (it ends with a barrier).
///
/// # Safety
///
/// NVSHMEM must be initialised and every PE must call with the same `bytes`, in the same order
/// relative to other collectives; `bytes` must be non-zero (NVSHMEM returns NULL for 0 without
/// the barrier, which would look like exhaustion).
pub unsafe fn malloc(lib: &Lib, bytes: usize) -> Option<u64> {
    // SAFETY: forwarded to the caller.
    let ptr = unsafe { (lib.nvshmem_malloc)(bytes) };
    (!ptr.is_null()).then_some(ptr as u64)
}

/// `nvshmem_free`. Collective (it starts with a barrier).
///
/// # Safety
///
/// `addr` must come from [`malloc`] and not be freed yet, no pending work may use it, and every
/// PE must free the same allocation at the same point.
pub unsafe fn free(lib: &Lib, addr: u64) {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmem_free)(addr as *mut c_void) }
}

/// `nvshmem_barrier_all` (host side; NVSHMEM's internal stream, synchronised before it
/// returns). Collective.
///
/// # Safety
///
/// NVSHMEM must be initialised; every PE must call it at the same point.
pub unsafe fn barrier_all(lib: &Lib) {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmem_barrier_all)() }
}

/// `nvshmem_ptr`: the address through which this process reaches PE `pe`'s copy of the
/// symmetric address `dest` directly (peer mapping over NVLink/PCIe, or the same GPU), or
/// `None` where only NVSHMEM's transports reach it (another node).
///
/// # Safety
///
/// NVSHMEM must be initialised; `dest` a symmetric address; `pe` in `0..n_pes`.
pub unsafe fn ptr(lib: &Lib, dest: u64, pe: usize) -> Option<u64> {
    // SAFETY: forwarded to the caller.
    let p = unsafe { (lib.nvshmem_ptr)(dest as *const std::ffi::c_void, pe as std::ffi::c_int) };
    (!p.is_null()).then_some(p as u64)
}

/// `nvshmemx_barrier_all_on_stream`: enqueues a barrier across all PEs on `stream`, after the
/// work already queued there. Collective.
///
/// # Safety
///
/// NVSHMEM must be initialised, `stream` must belong to the context NVSHMEM was initialised
/// on, and every PE must enqueue it at the same point.
pub unsafe fn barrier_all_on_stream(lib: &Lib, stream: CUstream) {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmemx_barrier_all_on_stream)(stream) }
}

/// `nvshmem_uint64_fcollect(NVSHMEM_TEAM_WORLD, dest, src, nelem)`: concatenates every PE's
/// `nelem` words from `src` into `dest`, in PE order. Collective; complete on return.
///
/// # Safety
///
/// `src` (`nelem` words) and `dest` (`nelem * n_pes` words) must be symmetric device
/// addresses, `dest` not read or written by anyone else until every PE has returned.
pub unsafe fn fcollect_u64(lib: &Lib, dest: u64, src: u64, nelem: usize) -> Result<()> {
    // SAFETY: forwarded to the caller.
    let status = unsafe {
        (lib.nvshmem_uint64_fcollect)(
            sys::NVSHMEM_TEAM_WORLD,
            dest as *mut u64,
            src as *const u64,
            nelem,
        )
    };
    check("nvshmem_uint64_fcollect", status, INIT_HINT)
}

/// `nvshmemx_cumodule_init`: points the module's `nvshmemi_device_state_d` at this PE's
/// NVSHMEM state (and checks the module's `nvshmemi_device_lib_version_d`).
///
/// # Safety
///
/// NVSHMEM must be initialised and `module` loaded in its context; the module must be passed to
/// [`cumodule_finalize`] before it is unloaded.
pub unsafe fn cumodule_init(lib: &Lib, module: CUmodule) -> Result<()> {
    // SAFETY: forwarded to the caller.
    let status = unsafe { (lib.nvshmemx_cumodule_init)(module) };
    check(
        "nvshmemx_cumodule_init",
        status,
        "the module must contain NVSHMEM's device state (nvshmemi_device_state_d and \
         nvshmemi_device_lib_version_d, kept by the builder's link step) from the same NVSHMEM \
         version as the host library",
    )
}

/// `nvshmemx_cumodule_finalize`: stops NVSHMEM from updating the module's device state.
///
/// # Safety
///
/// `module` must have been registered with [`cumodule_init`] and still be loaded.
pub unsafe fn cumodule_finalize(lib: &Lib, module: CUmodule) -> Result<()> {
    // SAFETY: forwarded to the caller.
    let status = unsafe { (lib.nvshmemx_cumodule_finalize)(module) };
    check("nvshmemx_cumodule_finalize", status, INIT_HINT)
}

/// `nvshmemx_init_status`: how NVSHMEM runs (`sys::NVSHMEM_STATUS_*`).
pub fn init_status(lib: &Lib) -> c_int {
    // SAFETY: a query without arguments; valid at any time.
    unsafe { (lib.nvshmemx_init_status)() }
}

/// Hint for the team calls that fail when NVSHMEM runs out of team slots.
const TEAM_HINT: &str = "NVSHMEM printed its reason above; NVSHMEM holds at most \
     NVSHMEM_MAX_TEAMS teams at once (default 32, the predefined ones included): drop \
     TeamHandles that are no longer needed, or raise NVSHMEM_MAX_TEAMS";

/// `nvshmem_team_split_strided(parent, start, stride, size, NULL, 0, &new)`: the new team's
/// handle on its members, [`sys::NVSHMEM_TEAM_INVALID`] on the parent's other PEs. Collective
/// over the parent team.
///
/// # Safety
///
/// NVSHMEM must be initialised (not in limited MPG mode, where it exits the process),
/// `parent` a live team of this PE, the triplet valid for it (NVSHMEM's own check is a
/// warning plus an error return after a barrier, which differs between releases), and every
/// member of `parent` must call with the same arguments.
pub unsafe fn team_split_strided(
    lib: &Lib,
    parent: sys::nvshmem_team_t,
    start: c_int,
    stride: c_int,
    size: c_int,
) -> Result<sys::nvshmem_team_t> {
    let mut team = sys::NVSHMEM_TEAM_INVALID;
    // SAFETY: forwarded to the caller; a NULL configuration with a zero mask makes the new
    // team inherit the parent's, and `team` is a valid out-pointer.
    let status = unsafe {
        (lib.nvshmem_team_split_strided)(
            parent,
            start,
            stride,
            size,
            std::ptr::null(),
            0,
            &mut team,
        )
    };
    check("nvshmem_team_split_strided", status, TEAM_HINT)?;
    Ok(team)
}

/// `nvshmem_team_split_2d(parent, xrange, NULL, 0, &x, NULL, 0, &y)`: this PE's row (`x`)
/// and column (`y`) teams. Collective over the parent team.
///
/// # Safety
///
/// As [`team_split_strided`], with `xrange >= 1`.
pub unsafe fn team_split_2d(
    lib: &Lib,
    parent: sys::nvshmem_team_t,
    xrange: c_int,
) -> Result<(sys::nvshmem_team_t, sys::nvshmem_team_t)> {
    let (mut x, mut y) = (sys::NVSHMEM_TEAM_INVALID, sys::NVSHMEM_TEAM_INVALID);
    // SAFETY: forwarded to the caller; NULL configurations with zero masks, valid
    // out-pointers.
    let status = unsafe {
        (lib.nvshmem_team_split_2d)(
            parent,
            xrange,
            std::ptr::null(),
            0,
            &mut x,
            std::ptr::null(),
            0,
            &mut y,
        )
    };
    check("nvshmem_team_split_2d", status, TEAM_HINT)?;
    // NVSHMEM 3.4.5 returns 0 even when one of its splits failed (it prints the failure), but
    // every PE of the parent belongs to one row and one column.
    if x == sys::NVSHMEM_TEAM_INVALID || y == sys::NVSHMEM_TEAM_INVALID {
        return Err(Error::Nvshmem {
            call: "nvshmem_team_split_2d",
            status: 0,
            hint: Some(format!(
                "it returned the row team {x} and the column team {y}, but every PE belongs to \
                 one of each; {TEAM_HINT}"
            )),
        });
    }
    Ok((x, y))
}

/// `nvshmem_team_destroy`: releases this PE's team resources (local in NVSHMEM 3.4.5).
///
/// # Safety
///
/// `team` must be a live split team of this PE that no queued or running work uses.
pub unsafe fn team_destroy(lib: &Lib, team: sys::nvshmem_team_t) {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmem_team_destroy)(team) }
}

/// `nvshmem_team_my_pe`, `nvshmem_team_n_pes` and `nvshmem_team_translate_pe`: -1 where the
/// PE is not a member, or for [`sys::NVSHMEM_TEAM_INVALID`].
///
/// # Safety
///
/// NVSHMEM must be initialised and every team live on this PE or `NVSHMEM_TEAM_INVALID`
/// (NVSHMEM indexes its team table with the handle unchecked).
pub unsafe fn team_my_pe(lib: &Lib, team: sys::nvshmem_team_t) -> c_int {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmem_team_my_pe)(team) }
}

/// See [`team_my_pe`].
///
/// # Safety
///
/// As [`team_my_pe`].
pub unsafe fn team_n_pes(lib: &Lib, team: sys::nvshmem_team_t) -> c_int {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmem_team_n_pes)(team) }
}

/// See [`team_my_pe`].
///
/// # Safety
///
/// As [`team_my_pe`], for both teams.
pub unsafe fn team_translate_pe(
    lib: &Lib,
    src: sys::nvshmem_team_t,
    pe: c_int,
    dest: sys::nvshmem_team_t,
) -> c_int {
    // SAFETY: forwarded to the caller.
    unsafe { (lib.nvshmem_team_translate_pe)(src, pe, dest) }
}

/// `nvshmemx_putmem_on_stream` (`put`) or `nvshmemx_getmem_on_stream`: enqueues a copy of
/// `bytes` bytes on `stream`, to symmetric `dest` on `pe` from local `src` (put), or to local
/// `dest` from symmetric `src` on `pe` (get).
///
/// # Safety
///
/// NVSHMEM must be initialised, `stream` on its context; the symmetric side a symmetric
/// range, the local side device memory of this PE, both valid for `bytes` bytes until the
/// stream has run the copy; `pe` in `0..n_pes`.
pub unsafe fn rma_on_stream(
    lib: &Lib,
    put: bool,
    dest: u64,
    src: u64,
    bytes: usize,
    pe: usize,
    stream: CUstream,
) {
    let f = if put {
        lib.nvshmemx_putmem_on_stream
    } else {
        lib.nvshmemx_getmem_on_stream
    };
    // SAFETY: forwarded to the caller; `pe < n_pes` fits an int.
    unsafe {
        f(
            dest as *mut c_void,
            src as *const c_void,
            bytes,
            pe as c_int,
            stream,
        )
    }
}

/// `NVSHMEM_SIGNAL_SET` (`device_host_transport/nvshmem_constants.h`).
const NVSHMEM_SIGNAL_SET: c_int = 9;

/// `nvshmemx_putmem_signal_on_stream` with `NVSHMEM_SIGNAL_SET`: enqueues on `stream` a copy
/// of `bytes` bytes from local `src` to symmetric `dest` on `pe`, then the store of `value`
/// into the symmetric `u64` at `sig` on `pe`, after the copy (for a peer mapped over NVLink or
/// on the same GPU: `cudaMemcpyAsync`, then `cuStreamWriteValue64`, both on `stream`; no
/// kernel).
///
/// # Safety
///
/// As [`rma_on_stream`] for the copy; `sig` is an 8-byte aligned symmetric address, valid on
/// `pe` until the stream has run the store.
#[allow(clippy::too_many_arguments)]
pub unsafe fn put_signal_on_stream(
    lib: &Lib,
    dest: u64,
    src: u64,
    bytes: usize,
    sig: u64,
    value: u64,
    pe: usize,
    stream: CUstream,
) {
    // SAFETY: forwarded to the caller; `pe < n_pes` fits an int.
    unsafe {
        (lib.nvshmemx_putmem_signal_on_stream)(
            dest as *mut c_void,
            src as *const c_void,
            bytes,
            sig as *mut u64,
            value,
            NVSHMEM_SIGNAL_SET,
            pe as c_int,
            stream,
        )
    }
}

/// `nvshmemx_barrier_on_stream`: enqueues a barrier over `team` on `stream`. Collective over
/// the team.
///
/// # Safety
///
/// As [`barrier_all_on_stream`], with `team` a live team of this PE that it is a member of,
/// and not in limited MPG mode.
pub unsafe fn barrier_on_stream(
    lib: &Lib,
    team: sys::nvshmem_team_t,
    stream: CUstream,
) -> Result<()> {
    // SAFETY: forwarded to the caller.
    let status = unsafe { (lib.nvshmemx_barrier_on_stream)(team, stream) };
    check("nvshmemx_barrier_on_stream", status, INIT_HINT)
}

/// One of NVSHMEM's typed on-stream collectives, chosen from a [`sys::TypedColls`] table.
#[derive(Clone, Copy, Debug)]
pub enum TypedColl {
    /// `nvshmemx_TYPENAME_fcollect_on_stream`.
    Fcollect,
    /// `nvshmemx_TYPENAME_alltoall_on_stream`.
    Alltoall,
    /// `nvshmemx_TYPENAME_broadcast_on_stream` from team PE `root`.
    Broadcast { root: c_int },
    /// `nvshmemx_TYPENAME_OP_reduce_on_stream`, `OP` = `sys::REDUCE_OPS[op]`.
    Reduce { op: usize },
    /// `nvshmemx_TYPENAME_OP_reducescatter_on_stream`, likewise.
    ReduceScatter { op: usize },
}

/// Enqueues collective `coll` of `colls.ty` elements over `team` on `stream` (`nelem` as
/// NVSHMEM counts it for that collective). Collective over the team.
///
/// # Safety
///
/// As [`barrier_on_stream`]; `dest` and `src` symmetric device addresses of `colls.ty`
/// elements, as many as the collective reads and writes for `nelem` on a team of this size,
/// untouched by anyone else until every member's stream has run it.
pub unsafe fn collective_on_stream(
    colls: &sys::TypedColls,
    coll: TypedColl,
    team: sys::nvshmem_team_t,
    dest: u64,
    src: u64,
    nelem: usize,
    stream: CUstream,
) -> Result<()> {
    let (dest, src) = (dest as *mut c_void, src as *const c_void);
    let missing = |what: &str, op: usize| Error::Nvshmem {
        call: "nvshmemx_TYPENAME_OP_reduce_on_stream",
        status: -1,
        hint: Some(format!(
            "NVSHMEM has no {} {what} of {} elements",
            sys::REDUCE_OPS[op],
            colls.ty
        )),
    };
    // SAFETY: every call is forwarded to the caller; each pointer was resolved for this
    // element type with this prototype.
    let (call, status) = unsafe {
        match coll {
            TypedColl::Fcollect => (
                "nvshmemx_TYPENAME_fcollect_on_stream",
                (colls.fcollect)(team, dest, src, nelem, stream),
            ),
            TypedColl::Alltoall => (
                "nvshmemx_TYPENAME_alltoall_on_stream",
                (colls.alltoall)(team, dest, src, nelem, stream),
            ),
            TypedColl::Broadcast { root } => (
                "nvshmemx_TYPENAME_broadcast_on_stream",
                (colls.broadcast)(team, dest, src, nelem, root, stream),
            ),
            TypedColl::Reduce { op } => (
                "nvshmemx_TYPENAME_OP_reduce_on_stream",
                colls.reduce[op].ok_or_else(|| missing("reduction", op))?(
                    team, dest, src, nelem, stream,
                ),
            ),
            TypedColl::ReduceScatter { op } => (
                "nvshmemx_TYPENAME_OP_reducescatter_on_stream",
                colls.reducescatter[op].ok_or_else(|| missing("reduce-scatter", op))?(
                    team, dest, src, nelem, stream,
                ),
            ),
        }
    };
    check(
        call,
        status,
        &format!("with TYPENAME = {}; {INIT_HINT}", colls.ty),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_carry_call_status_and_hint() {
        assert!(check("x", 0, "h").is_ok());
        let msg = check("nvshmemx_cumodule_init", 7, "the module must ...")
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("nvshmemx_cumodule_init")
                && msg.contains("7")
                && msg.contains("the module must"),
            "{msg}"
        );
    }
}
