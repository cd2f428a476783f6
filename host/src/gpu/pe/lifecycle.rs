//! A GPU PE's start and end: [`GpuPe::new`] on an initialised NVSHMEM, the verdict after the
//! PE's closure ([`PeBackend::finish`]), and NVSHMEM's collective teardown on drop, run only
//! when this PE and its GPU are healthy.

use super::super::cuda::{Context, Stream};
use super::super::heap_accounting::heap_limit;
use super::super::nvshmem::{result as nv, sys, Nvshmem};
use super::super::tensor_map::encode_tiled;
use super::super::Watch;
use super::alloc::control_block;
use super::fault::Mailbox;
use super::module::load;
use super::state::{lock, GpuPe, PeShared};
use super::term::Watchdog;
use crate::contract::{
    BoxError, Checked, DeviceInfo, Error, GpuSharing, KernelImage, ModuleBackend, PeBackend,
    Result, TiledSpec,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

impl GpuPe {
    /// Builds the PE on an initialised NVSHMEM whose context is `ctx`. Collective (it
    /// allocates the control block).
    pub(crate) fn new(
        nvshmem: &'static Nvshmem,
        ctx: Arc<Context>,
        pe: usize,
        npes: usize,
        watch: &Watch<'_>,
    ) -> Result<GpuPe> {
        let lib = nvshmem.lib();
        let numbered = nv::my_pe_n_pes(lib)?;
        if numbered != (pe, npes) {
            return Err(Error::Launcher(format!(
                "NVSHMEM numbered this process PE {} of {}, but it was started as PE {pe} of \
                 {npes}: the launcher's variables and NVSHMEM's bootstrap disagree",
                numbered.0, numbered.1
            )));
        }
        let limit = heap_limit(&|k| std::env::var_os(k), ctx.vmm_supported)?;
        let stream = Arc::new(Stream::new(&ctx)?);
        let (control, state) = control_block(lib, npes)?;
        let mailbox = Mailbox::new(&ctx, watch.timeout)?;
        let shared = Arc::new(PeShared {
            nvshmem,
            stream,
            user_streams: Mutex::default(),
            pe,
            npes,
            mailbox,
            serial: Mutex::new(state),
            pending: Mutex::default(),
            capture: Mutex::default(),
            fault_reported: AtomicBool::new(false),
            progress: AtomicU64::new(0),
            blocking: Mutex::default(),
            sharing: match nv::init_status(lib) {
                sys::NVSHMEM_STATUS_FULL_MPG => GpuSharing::Mps,
                sys::NVSHMEM_STATUS_LIMITED_MPG => GpuSharing::TimeSliced,
                _ => GpuSharing::Exclusive,
            },
        });
        Ok(GpuPe {
            _watchdog: Watchdog::start(&shared, watch),
            shared,
            limit,
            control,
            abandoned: AtomicBool::new(false),
        })
    }
}

impl PeBackend for GpuPe {
    fn my_pe(&self) -> usize {
        self.shared.pe
    }

    fn n_pes(&self) -> usize {
        self.shared.npes
    }

    fn barrier_all(&self) -> Result<()> {
        let _serial = lock(&self.shared.serial);
        let _blocking = self.shared.blocking("barrier_all");
        self.shared.ctx().bind()?;
        // SAFETY: NVSHMEM is initialised; every PE reaches its barriers in the same order.
        unsafe { nv::barrier_all(self.shared.lib()) };
        Ok(())
    }

    fn load(&self, image: &KernelImage) -> Result<Box<dyn ModuleBackend>> {
        load(&self.shared, image)
    }

    fn device_info(&self) -> DeviceInfo {
        let ctx = self.shared.ctx();
        DeviceInfo {
            sm: ctx.sm,
            multiprocessors: ctx.sm_count,
            sharing: self.shared.sharing,
        }
    }

    fn encode_tensor_map(
        &self,
        spec: &TiledSpec<'_>,
        checked: &Checked,
    ) -> Result<rshmem_device::hopper::TensorMap> {
        // The driver entry point needs no context: it only encodes the parameters.
        encode_tiled(spec, checked)
    }

    fn finish(&self, outcome: Result<(), BoxError>) -> Result<(), BoxError> {
        let faulted = &self.shared.fault_reported;
        // A kernel fault the closure did not wait for is this PE's failure too, and must be
        // known before deciding whether the collective teardown may run. A fault the closure
        // was told about and handled (a test of the failure itself) is not reported again,
        // but the dead context still rules out the teardown.
        let outcome = outcome.and_then(|()| {
            let handled = faulted.load(Ordering::SeqCst);
            match self.shared.sync() {
                Err(_) if handled => Ok(()),
                other => other.map_err(BoxError::from),
            }
        });
        if outcome.is_err() || faulted.load(Ordering::SeqCst) {
            self.abandoned.store(true, Ordering::SeqCst);
        }
        outcome
    }
}

impl Drop for GpuPe {
    fn drop(&mut self) {
        let sh = &*self.shared;
        // Finalising is collective and, on a CUDA error, NVSHMEM exits the process: run it only
        // when this PE succeeded and its GPU is healthy. Otherwise the other PEs may be in any
        // collective (or gone), and the launcher ends the job; keep NVSHMEM, the stream and the
        // context alive until the process exits.
        let healthy = !self.abandoned.load(Ordering::SeqCst)
            && !std::thread::panicking()
            && sh.sync().is_ok()
            && sh.ctx().bind().is_ok();
        if !healthy {
            std::mem::forget(self.shared.clone());
            return;
        }
        let _serial = lock(&sh.serial);
        let _blocking = sh.blocking("finalize (NVSHMEM's collective teardown)");
        // SAFETY: every module was dropped (modules borrow the `Shmem` owning this PE), which
        // finalised them; no symmetric memory is used after this; every PE drops its `Shmem`
        // at the same point, after its closure returned successfully.
        unsafe { nv::finalize(sh.lib()) };
    }
}
