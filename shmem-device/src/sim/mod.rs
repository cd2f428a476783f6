//! The CPU simulator, device side. OWNED BY THE SIMULATOR WORK: to be implemented.

/// The backend interface (see `backend/mod.rs`), host implementation.
pub mod device {
    use crate::shmem::ScopeKind;
    use crate::thread::Dim3;
    pub(crate) fn thread_idx() -> Dim3 {
        todo!()
    }
    pub(crate) fn block_idx() -> Dim3 {
        todo!()
    }
    pub(crate) fn block_dim() -> Dim3 {
        todo!()
    }
    pub(crate) fn grid_dim() -> Dim3 {
        todo!()
    }
    pub(crate) fn sync_threads() {
        todo!()
    }
    pub(crate) fn my_pe() -> i32 {
        todo!()
    }
    pub(crate) fn n_pes() -> i32 {
        todo!()
    }
    pub(crate) fn fence() {
        todo!()
    }
    pub(crate) fn quiet() {
        todo!()
    }
    pub(crate) fn barrier_all(_s: ScopeKind) {
        todo!()
    }
    pub(crate) fn sync_all(_s: ScopeKind) {
        todo!()
    }
    pub(crate) unsafe fn putmem(
        _s: ScopeKind,
        _nbi: bool,
        _d: *mut u8,
        _src: *const u8,
        _n: usize,
        _pe: i32,
    ) {
        todo!()
    }
    pub(crate) unsafe fn getmem(
        _s: ScopeKind,
        _nbi: bool,
        _d: *mut u8,
        _src: *const u8,
        _n: usize,
        _pe: i32,
    ) {
        todo!()
    }
}

/// Typed single-element RMA for `RmaScalar`.
pub mod rma {
    pub(crate) unsafe fn p<T: Copy>(_d: *mut T, _v: T, _pe: i32) {
        todo!()
    }
    pub(crate) unsafe fn g<T: Copy>(_s: *const T, _pe: i32) -> T {
        todo!()
    }
}
