//! One macro for every device call that exists twice: as an NVSHMEM device function on
//! nvptx64, and as the simulator's implementation on the host.

/// `nv_or_sim!(nvshmem_fn(a: A, b: B) -> R, sim: expr)`: on nvptx64 declares `nvshmem_fn`
/// (resolved by the builder's link with NVSHMEM's bitcode) and calls it with the named
/// arguments; on the host evaluates `expr`. Must be used inside an `unsafe` context.
macro_rules! nv_or_sim {
    ($nv:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?, sim: $sim:expr) => {{
        #[cfg(target_arch = "nvptx64")]
        {
            extern "C" {
                fn $nv($($arg: $ty),*) $(-> $ret)?;
            }
            $nv($($arg),*)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            $sim
        }
    }};
}

pub(crate) use nv_or_sim;

/// Calls the thread, warp or block form of an NVSHMEM family, blocking or `_nbi`:
/// `nvshmem_<base>[_nbi]`, `nvshmemx_<base>[_nbi]_warp`, `nvshmemx_<base>[_nbi]_block`. On the
/// host evaluates `sim` (which sees the same arguments). `$scope` is a [`ScopeKind`] and `$nbi`
/// a `bool`, both constants after inlining, so the match folds away.
///
/// [`ScopeKind`]: crate::shmem::ScopeKind
macro_rules! scoped_call {
    ($scope:expr, nbi: $nbi:expr, $base:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?, sim: $sim:expr) => { paste::paste! {
        match ($scope, $nbi) {
            (crate::shmem::ScopeKind::Thread, false) => $crate::shmem::call::nv_or_sim!([<nvshmem_ $base>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
            (crate::shmem::ScopeKind::Thread, true) => $crate::shmem::call::nv_or_sim!([<nvshmem_ $base _nbi>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
            (crate::shmem::ScopeKind::Warp, false) => $crate::shmem::call::nv_or_sim!([<nvshmemx_ $base _warp>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
            (crate::shmem::ScopeKind::Warp, true) => $crate::shmem::call::nv_or_sim!([<nvshmemx_ $base _nbi_warp>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
            (crate::shmem::ScopeKind::Block, false) => $crate::shmem::call::nv_or_sim!([<nvshmemx_ $base _block>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
            (crate::shmem::ScopeKind::Block, true) => $crate::shmem::call::nv_or_sim!([<nvshmemx_ $base _nbi_block>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
        }
    }};
    ($scope:expr, $base:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)?, sim: $sim:expr) => { paste::paste! {
        match $scope {
            crate::shmem::ScopeKind::Thread => $crate::shmem::call::nv_or_sim!([<nvshmem_ $base>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
            crate::shmem::ScopeKind::Warp => $crate::shmem::call::nv_or_sim!([<nvshmemx_ $base _warp>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
            crate::shmem::ScopeKind::Block => $crate::shmem::call::nv_or_sim!([<nvshmemx_ $base _block>]($($arg: $ty),*) $(-> $ret)?, sim: $sim),
        }
    }};
}

pub(crate) use scoped_call;
