//! One PE as Python holds it ([`PeCore`]): the `Shmem` the program owns (attached to a GPU or
//! handed out by a simulated job), rshmem's `Ops` on it, the streams adopted from torch, and
//! the symmetric allocations alive, by address, so that a tensor (or a view of one) passed to
//! an op is found back as the symmetric range it is.
//!
//! Lifetimes: `Ops`, the streams and every allocation borrow the `Shmem`; Python drops objects
//! in any order, so each of them holds an `Arc<PeCore>` and the borrows are made `'static`
//! here, under one rule: the `Shmem` (boxed, never moved) is dropped only after them — `Live`
//! drops its fields in order, and an allocation frees its buffer under the state's read lock,
//! which `end` takes for writing.

use crate::error::{arg, OrRaise, RshmemError};
use pyo3::prelude::*;
use rshmem_host::{Backend, Shmem, Stream, SymBuffer, SymRange, SymRangeMut};
use rshmem_ops::Ops;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, Weak};

/// What a live PE holds. Fields drop in order: everything borrowing the `Shmem` first.
pub struct Live {
    pub ops: Ops<'static>,
    /// Streams adopted from the program (torch's), by raw handle.
    streams: Mutex<HashMap<u64, Arc<Stream<'static>>>>,
    shmem: Box<Shmem>,
}

impl Live {
    /// The PE's `Shmem`.
    pub fn shmem(&self) -> &'static Shmem {
        // SAFETY: the `Shmem` is boxed (its address never changes) and dropped last of
        // `Live`'s fields, after everything this reference is lent to here: `Ops`, the
        // streams, and the allocations, which keep the `PeCore` (so `Live`) alive and free
        // under its read lock.
        unsafe { &*(self.shmem.as_ref() as *const Shmem) }
    }

    /// The stream with raw handle `raw` (adopted once), or the PE's own stream for `None`.
    pub fn stream(&self, raw: Option<u64>) -> PyResult<Arc<Stream<'static>>> {
        let Some(raw) = raw else {
            return Ok(Arc::new(self.shmem().stream()));
        };
        let mut streams = self.streams.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = streams.get(&raw) {
            return Ok(s.clone());
        }
        // SAFETY: the Python layer passes torch's current (or a given) CUDA stream of this
        // PE's device, whose handle torch keeps alive for the process (torch never destroys
        // its pool's streams); on the simulator it is only a name.
        let stream = Arc::new(unsafe { self.shmem().adopt_stream(raw) }.or_raise()?);
        streams.insert(raw, stream.clone());
        Ok(stream)
    }
}

/// Symmetric memory registered at an address: its bytes and what holds it.
type Registered = (usize, Weak<dyn Region>);

/// Why a PE no longer runs work.
#[derive(Clone, Debug)]
enum Ended {
    Finalized,
    Returned,
}

/// A PE's state: live (`live` set, `ended` not), ended but kept for the tensors still alive
/// (both set: their memory stays valid, ops are refused), or gone.
struct State {
    live: Option<Box<Live>>,
    ended: Option<Ended>,
}

/// One PE as the Python layer holds it.
pub struct PeCore {
    pub pe: usize,
    pub npes: usize,
    pub backend: Backend,
    state: RwLock<State>,
    /// Live symmetric memory by start address.
    regions: Mutex<BTreeMap<u64, Registered>>,
    /// Objects alive that borrow the PE (allocations, modules, graphs, MoE buffers).
    objects: AtomicUsize,
}

impl PeCore {
    /// The PE of `shmem`, with rshmem's ops loaded (collective: `Ops::new` allocates).
    /// Called without the GIL.
    pub fn new(shmem: Shmem) -> rshmem_host::Result<Arc<PeCore>> {
        let shmem = Box::new(shmem);
        // SAFETY: as `Live::shmem`: boxed, and dropped after the `Ops` made here.
        let borrowed: &'static Shmem = unsafe { &*(shmem.as_ref() as *const Shmem) };
        let ops = Ops::new(borrowed)?;
        Ok(Arc::new(PeCore {
            pe: borrowed.my_pe(),
            npes: borrowed.n_pes(),
            backend: borrowed.backend(),
            state: RwLock::new(State {
                live: Some(Box::new(Live {
                    ops,
                    streams: Mutex::default(),
                    shmem,
                })),
                ended: None,
            }),
            regions: Mutex::default(),
            objects: AtomicUsize::new(0),
        }))
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` on the live PE (under the state's read lock); an error if the PE has ended.
    pub fn with_live<R>(&self, f: impl FnOnce(&Live) -> PyResult<R>) -> PyResult<R> {
        let state = self.read();
        match (&state.live, &state.ended) {
            (Some(live), None) => f(live),
            (_, ended) => Err(RshmemError::new_err(format!(
                "PE {} has ended ({}): its tensors stay readable, but no more work runs on it",
                self.pe,
                match ended {
                    Some(Ended::Finalized) => "rshmem.finalize() was called",
                    _ => "its simulated PE function returned",
                }
            ))),
        }
    }

    /// Drops `value` (which borrows the PE's `Shmem`) while the `Shmem` surely lives.
    fn drop_within<T>(&self, value: T) {
        let state = self.read();
        drop(value);
        drop(state);
    }

    /// The end of an object counted by [`PeCore::retain`]: drops what `slot` holds (it borrows
    /// the PE's `Shmem`) while the `Shmem` surely lives, then [`PeCore::release`]s the object.
    pub fn end_object<T>(&self, slot: &mut Mutex<Option<T>>) {
        let value = slot.get_mut().unwrap_or_else(|p| p.into_inner()).take();
        self.drop_within(value);
        self.release();
    }

    /// Counts an object that borrows the PE (until `released`).
    pub fn retain(&self) {
        self.objects.fetch_add(1, Ordering::SeqCst);
    }

    /// An object counted by `retain` is gone; the last one of an ended PE lets it go.
    pub fn release(&self) {
        if self.objects.fetch_sub(1, Ordering::SeqCst) == 1 {
            let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
            if state.ended.is_some() {
                if let Some(live) = state.live.take() {
                    let _ = teardown(live, false);
                }
            }
        }
    }

    /// Ends the PE: `finalize` runs the backend's collective teardown (NVSHMEM's finalize),
    /// which needs every object borrowing the PE gone (else an error saying how many live);
    /// otherwise (a simulated PE's function returned, an interpreter exit) the PE is
    /// abandoned: without a collective teardown, its memory kept while tensors use it.
    pub fn end(&self, finalize: bool) -> PyResult<()> {
        let mut state = self.state.write().unwrap_or_else(|p| p.into_inner());
        if state.ended.is_some() {
            return Ok(());
        }
        let live = self.objects.load(Ordering::SeqCst);
        if finalize && live > 0 {
            return Err(RshmemError::new_err(format!(
                "rshmem.finalize() on PE {}: {live} symmetric tensor(s), kernel module(s), \
                 graph(s), team(s), MoE buffer(s) or weights are still alive and use the PE, \
                 which finalize ends; `del` them (and what views them) first",
                self.pe
            )));
        }
        state.ended = Some(if finalize {
            Ended::Finalized
        } else {
            Ended::Returned
        });
        if live > 0 {
            // Kept: the tensors alive point into the heap (a simulated heap stays mapped;
            // a GPU PE is abandoned with the heap mapped until the process exits).
            return Ok(());
        }
        teardown(state.live.take().expect("a PE not ended is live"), finalize)
    }

    /// Registers `region` at `addr` (`bytes` long) for `find`.
    pub fn register(&self, addr: u64, bytes: usize, region: Weak<dyn Region>) {
        if bytes > 0 {
            self.regions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(addr, (bytes, region));
        }
    }

    /// Forgets the region registered at `addr`.
    pub fn unregister(&self, addr: u64) {
        self.regions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&addr);
    }

    /// Where the `bytes` bytes at `ptr` are: inside a live symmetric allocation (and where
    /// they start in it), starting in one and running past its end, or outside every one.
    pub fn lookup(&self, ptr: u64, bytes: usize) -> Found {
        let regions = self.regions.lock().unwrap_or_else(|p| p.into_inner());
        let Some((&start, (len, region))) = regions.range(..=ptr).next_back() else {
            return Found::Outside;
        };
        let end = start + *len as u64;
        if ptr >= end {
            return Found::Outside;
        }
        if ptr.checked_add(bytes as u64).is_none_or(|e| e > end) {
            return Found::Straddles;
        }
        match region.upgrade() {
            Some(region) => Found::Inside(region, (ptr - start) as usize),
            None => Found::Outside,
        }
    }

    /// The live symmetric memory holding the `bytes` bytes at `ptr`, and where they start in
    /// it; an argument error naming `what` if no symmetric allocation holds them all.
    pub fn find(
        &self,
        call: &str,
        what: &str,
        ptr: u64,
        bytes: usize,
    ) -> PyResult<(Arc<dyn Region>, usize)> {
        match self.lookup(ptr, bytes) {
            Found::Inside(region, at) => Ok((region, at)),
            Found::Straddles => Err(self.straddles(call, what, ptr, bytes)),
            Found::Outside => Err(arg(format!(
                "{call}: `{what}` ({bytes} bytes at {ptr:#x}) is not on PE {}'s symmetric heap: \
                 allocate it with rshmem.empty / rshmem.zeros (a view or slice of one is fine; \
                 a copy is not)",
                self.pe
            ))),
        }
    }

    /// The error for memory that starts in a symmetric allocation and runs past its end.
    pub fn straddles(&self, call: &str, what: &str, ptr: u64, bytes: usize) -> PyErr {
        arg(format!(
            "{call}: `{what}` ({bytes} bytes at {ptr:#x}) starts in a symmetric allocation of \
             PE {} and runs past its end: pass a view or slice inside one tensor",
            self.pe
        ))
    }
}

/// Where memory is, for [`PeCore::lookup`].
pub enum Found {
    /// Inside a live symmetric allocation, this many bytes into it.
    Inside(Arc<dyn Region>, usize),
    /// Starting in one and running past its end.
    Straddles,
    /// In no symmetric allocation.
    Outside,
}

/// Symmetric memory the Python layer hands out as tensors: an allocation of its own, or a
/// buffer an op's state holds (the MoE receive buffers). Byte ranges of it, by offset.
pub trait Region: Send + Sync {
    /// Bytes `at..at + bytes`, shared.
    fn bytes(&self, at: usize, bytes: usize) -> PyResult<SymRange<'static, u8>>;
    /// Bytes `at..at + bytes`, exclusive (what an op writes).
    fn bytes_mut(&self, at: usize, bytes: usize) -> PyResult<SymRangeMut<'static, u8>>;
}

/// `range` with its lifetime extended.
///
/// # Safety
///
/// The caller keeps the memory allocated while the range is used (holds its region's `Arc`).
pub unsafe fn extend<T: rshmem_host::Pod>(range: SymRange<'_, T>) -> SymRange<'static, T> {
    // SAFETY: a range is an address and a length; the lifetime is the caller's contract.
    unsafe { std::mem::transmute::<SymRange<'_, T>, SymRange<'static, T>>(range) }
}

/// [`extend`], exclusive.
///
/// # Safety
///
/// As [`extend`].
pub unsafe fn extend_mut<T: rshmem_host::Pod>(
    range: SymRangeMut<'_, T>,
) -> SymRangeMut<'static, T> {
    // SAFETY: as in `extend`.
    unsafe { std::mem::transmute::<SymRangeMut<'_, T>, SymRangeMut<'static, T>>(range) }
}

/// Drops what borrows the `Shmem`, then ends it: collectively (`finalize`) or abandoned.
fn teardown(live: Box<Live>, finalize: bool) -> PyResult<()> {
    let Live {
        ops,
        streams,
        shmem,
    } = *live;
    drop(ops);
    drop(streams);
    if finalize {
        shmem.finalize().or_raise()
    } else {
        shmem.abandon("the PE ended without rshmem.finalize()");
        Ok(())
    }
}

impl Drop for PeCore {
    fn drop(&mut self) {
        // Every object that borrowed the PE is gone (each held this `Arc`). A PE nobody
        // finalized is abandoned, never torn down collectively at an arbitrary moment.
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(live) = state.live.take() {
            let _ = teardown(live, false);
        }
    }
}

/// One symmetric allocation: the buffer, freed (collectively: deferred on GPUs, local on the
/// simulator) when the last tensor over it goes.
pub struct Alloc {
    pub core: Arc<PeCore>,
    buf: Mutex<Option<SymBuffer<'static, u8>>>,
    /// Its local address and size.
    pub addr: u64,
    pub bytes: usize,
}

impl Alloc {
    /// Allocates `bytes` on the PE's symmetric heap, zero-filled. Collective; called without
    /// the GIL.
    pub fn new(core: &Arc<PeCore>, bytes: usize) -> PyResult<Arc<Alloc>> {
        let buf = core.with_live(|live| live.shmem().alloc_zeroed::<u8>(bytes).or_raise())?;
        let addr = buf.as_ptr() as u64;
        core.retain();
        let alloc = Arc::new(Alloc {
            core: core.clone(),
            buf: Mutex::new(Some(buf)),
            addr,
            bytes,
        });
        let weak: Weak<dyn Region> = Arc::downgrade(&alloc) as Weak<dyn Region>;
        core.register(addr, bytes, weak);
        Ok(alloc)
    }
}

impl Region for Alloc {
    fn bytes(&self, at: usize, bytes: usize) -> PyResult<SymRange<'static, u8>> {
        let guard = self.buf.lock().unwrap_or_else(|p| p.into_inner());
        let buf = guard
            .as_ref()
            .expect("an allocation alive holds its buffer");
        // SAFETY: the caller holds this allocation while it uses the range.
        Ok(unsafe { extend(buf.range(at..at + bytes).or_raise()?) })
    }

    fn bytes_mut(&self, at: usize, bytes: usize) -> PyResult<SymRangeMut<'static, u8>> {
        let mut guard = self.buf.lock().unwrap_or_else(|p| p.into_inner());
        let buf = guard
            .as_mut()
            .expect("an allocation alive holds its buffer");
        // SAFETY: as in `bytes`.
        Ok(unsafe { extend_mut(buf.range_mut(at..at + bytes).or_raise()?) })
    }
}

impl Drop for Alloc {
    fn drop(&mut self) {
        self.core.unregister(self.addr);
        self.core.end_object(&mut self.buf);
    }
}
