//! [`SymQueue`]: creating a symmetric MPMC queue and looking at it from the host.
//!
//! The queue itself — algorithm, ordering argument, device operations — is documented in
//! `rshmem_device::queue`. The host side owns its two symmetric allocations (freed on drop),
//! initialises them, and hands kernels the device handle.
//!
//! ```no_run
//! use rshmem_host::{Shmem, SymQueue};
//! rshmem_host::run(|shmem: &Shmem| -> Result<(), rshmem_host::BoxError> {
//!     // A 100-slot queue of u64 whose ring lives on PE 0; every PE calls this.
//!     let queue = SymQueue::<u64>::new(shmem, 100, 0)?;
//!     let handle = queue.handle(); // pass to kernels: launch::<k>(cfg, (handle, ..))
//!     # let _ = handle;
//!     if shmem.my_pe() == 0 {
//!         println!("{}", queue.snapshot()?);
//!     }
//!     Ok(())
//! })?;
//! # Ok::<(), rshmem_host::Error>(())
//! ```

use crate::contract::Error;
use crate::shmem::Shmem;
use crate::sym_buffer::SymBuffer;
use bytemuck::Pod;
use rshmem_device::queue::layout;
use std::fmt;

/// The device handle kernels take (`rshmem_device::queue::SymQueue`).
pub type DeviceQueue<T> = rshmem_device::queue::SymQueue<T>;

/// The environment variable that sets the default debug bound (polls per wait).
pub const MAX_SPINS_ENV: &str = "RSHMEM_QUEUE_MAX_SPINS";

/// What creating or inspecting a queue can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueueError {
    /// A capacity of 0 was asked for.
    #[error("a SymQueue needs a capacity of at least 1")]
    ZeroCapacity,
    /// The element type has no bytes.
    #[error("SymQueue<{0}>: the element type has size 0; a queue of nothing needs no memory (use a counter)")]
    ZeroSizedElement(&'static str),
    /// The capacity does not fit the address space.
    #[error("a SymQueue of {capacity} elements of {element_bytes} bytes does not fit in memory")]
    TooLarge {
        /// Slots asked for.
        capacity: usize,
        /// Bytes per element.
        element_bytes: usize,
    },
    /// The home PE is not a PE of the job.
    #[error(
        "SymQueue home PE {home} does not exist: the job has {n_pes} PE(s), numbered 0..{n_pes}"
    )]
    NoSuchPe {
        /// The PE asked for.
        home: usize,
        /// PEs in the job.
        n_pes: usize,
    },
    /// A home-PE queue was inspected on another PE, whose copy is not the queue.
    #[error("SymQueue \"{label}\" lives on PE {home}; this is PE {pe}, whose copy is unused. Take the snapshot on PE {home}")]
    NotHome {
        /// The queue's label.
        label: String,
        /// Its home PE.
        home: usize,
        /// This PE.
        pe: usize,
    },
    /// The runtime failed (allocation, copy, a kernel failure surfacing at synchronisation).
    #[error(transparent)]
    Runtime(#[from] Error),
}

/// Where a queue's ring is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// One queue, on this PE; every PE's handle addresses it.
    Home(usize),
    /// One queue per PE (mailboxes): each PE's handle addresses its own queue, and kernels
    /// reach another PE's with `handle.on(pe)`.
    PerPe,
}

/// Settings of a queue beyond its capacity and placement: [`SymQueue::builder`].
#[derive(Clone, Debug)]
pub struct QueueBuilder {
    capacity: usize,
    placement: Placement,
    label: Option<String>,
    max_spins: Option<u64>,
    first_ticket: u64,
}

impl QueueBuilder {
    /// A queue of `capacity` slots on PE 0.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            placement: Placement::Home(0),
            label: None,
            max_spins: None,
            first_ticket: 0,
        }
    }

    /// The ring lives on PE `pe` (the default is PE 0).
    pub fn home(mut self, pe: usize) -> Self {
        self.placement = Placement::Home(pe);
        self
    }

    /// One queue per PE (mailboxes).
    pub fn per_pe(mut self) -> Self {
        self.placement = Placement::PerPe;
        self
    }

    /// The name messages use (at most 47 bytes are kept). Default: `SymQueue<T>`.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Debug bound: a wait that polls `n` times without its slot becoming ready stops the
    /// kernel with a message naming the queue, PE and ticket (see `rshmem_device::queue`).
    /// 0 means no bound. Default: `RSHMEM_QUEUE_MAX_SPINS`, else 0.
    pub fn max_spins(mut self, n: u64) -> Self {
        self.max_spins = Some(n);
        self
    }

    /// Starts both ticket counters at `ticket` instead of 0. For tests and debugging: it
    /// exercises tickets past `2^32` (or any boundary) without pushing billions of elements
    /// first. The queue behaves the same from any start.
    pub fn first_ticket(mut self, ticket: u64) -> Self {
        self.first_ticket = ticket;
        self
    }

    /// Creates the queue. Collective: every PE calls it with the same settings, in the same
    /// order as its other symmetric allocations; it returns after all PEs have initialised
    /// their copy (a barrier), so kernels may use it at once.
    pub fn build<T: Pod>(self, shmem: &Shmem) -> Result<SymQueue<'_, T>, QueueError> {
        SymQueue::create(shmem, self)
    }
}

/// A symmetric MPMC queue of `T`, owned by the host: its allocations live as long as this
/// value (freed collectively on drop, like any [`SymBuffer`]). Kernels get
/// [`SymQueue::handle`].
pub struct SymQueue<'s, T: Pod> {
    shmem: &'s Shmem,
    words: SymBuffer<'s, u64>,
    // Owned for the allocation's lifetime; kernels reach it through the handle.
    _slots: SymBuffer<'s, T>,
    handle: DeviceQueue<T>,
    label: String,
    placement: Placement,
    first_ticket: u64,
}

impl<'s, T: Pod> SymQueue<'s, T> {
    /// A queue of `capacity` slots whose ring lives on PE `home`. Collective.
    pub fn new(shmem: &'s Shmem, capacity: usize, home: usize) -> Result<Self, QueueError> {
        QueueBuilder::new(capacity).home(home).build(shmem)
    }

    /// One queue of `capacity` slots on every PE (mailboxes). Collective.
    pub fn per_pe(shmem: &'s Shmem, capacity: usize) -> Result<Self, QueueError> {
        QueueBuilder::new(capacity).per_pe().build(shmem)
    }

    /// Settings beyond capacity and home: label, debug bound, first ticket.
    pub fn builder(capacity: usize) -> QueueBuilder {
        QueueBuilder::new(capacity)
    }

    fn create(shmem: &'s Shmem, b: QueueBuilder) -> Result<Self, QueueError> {
        let element_bytes = std::mem::size_of::<T>();
        if b.capacity == 0 {
            return Err(QueueError::ZeroCapacity);
        }
        if element_bytes == 0 {
            return Err(QueueError::ZeroSizedElement(std::any::type_name::<T>()));
        }
        let too_large = QueueError::TooLarge {
            capacity: b.capacity,
            element_bytes,
        };
        let (Some(words_len), Some(_)) = (
            layout::words_len(b.capacity),
            b.capacity.checked_mul(element_bytes),
        ) else {
            return Err(too_large);
        };
        let (me, n_pes) = (shmem.my_pe(), shmem.n_pes());
        let pe = match b.placement {
            Placement::Home(home) if home >= n_pes => {
                return Err(QueueError::NoSuchPe { home, n_pes })
            }
            Placement::Home(home) => home,
            Placement::PerPe => me,
        };
        let max_spins = match b.max_spins {
            Some(n) => n,
            None => max_spins_from_env()?,
        };
        let label = b
            .label
            .unwrap_or_else(|| format!("SymQueue<{}>", short_type_name::<T>()));
        let capacity = b.capacity as u64;
        let init: Vec<u64> = layout::initial_words(capacity, b.first_ticket, &label).collect();
        debug_assert_eq!(init.len(), words_len);
        let mut words = shmem.alloc_from(&init)?;
        let mut slots = shmem.alloc_zeroed::<T>(b.capacity)?;
        // SAFETY: `words` and `slots` are symmetric allocations of the sizes the layout asks
        // for, initialised on this PE above and on every other PE by its own call (the
        // barrier below waits for all of them); `capacity >= 1`; `pe < n_pes`.
        let handle = unsafe {
            DeviceQueue::from_raw_parts(
                words.as_mut_ptr(),
                slots.as_mut_ptr(),
                capacity,
                pe as i32,
                max_spins,
            )
        };
        shmem.barrier_all()?;
        Ok(Self {
            shmem,
            words,
            _slots: slots,
            handle,
            label,
            placement: b.placement,
            first_ticket: b.first_ticket,
        })
    }

    /// The handle kernels take. It addresses the home PE's queue (or, per-PE, this PE's).
    pub fn handle(&self) -> DeviceQueue<T> {
        self.handle
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.handle.capacity() as usize
    }

    /// The name messages use.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Where the ring is.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The ticket both counters started at.
    pub fn first_ticket(&self) -> u64 {
        self.first_ticket
    }

    /// The counters of the queue on this PE, after this PE's launched work has finished: for
    /// a home-PE queue, call it on the home PE ([`QueueError::NotHome`] elsewhere); per-PE,
    /// it describes this PE's mailbox. A debugging aid: other PEs may still be pushing or
    /// popping when it is read.
    pub fn snapshot(&self) -> Result<QueueSnapshot, QueueError> {
        let me = self.shmem.my_pe();
        if let Placement::Home(home) = self.placement {
            if home != me {
                return Err(QueueError::NotHome {
                    label: self.label.clone(),
                    home,
                    pe: me,
                });
            }
        }
        // The counters are the words' first lines; reading them all keeps to the buffer API.
        let words = self.words.to_vec()?;
        Ok(QueueSnapshot {
            pe: me,
            capacity: self.handle.capacity(),
            tail: words[layout::TAIL],
            head: words[layout::HEAD],
        })
    }

    /// Elements in the queue on this PE now ([`QueueSnapshot::len`] of [`Self::snapshot`]).
    pub fn len(&self) -> Result<u64, QueueError> {
        Ok(self.snapshot()?.len())
    }

    /// Whether [`Self::len`] is 0.
    pub fn is_empty(&self) -> Result<bool, QueueError> {
        Ok(self.len()? == 0)
    }
}

impl<T: Pod> fmt::Debug for SymQueue<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymQueue")
            .field("label", &self.label)
            .field("type", &std::any::type_name::<T>())
            .field("capacity", &self.capacity())
            .field("placement", &self.placement)
            .field("handle", &self.handle)
            .finish()
    }
}

/// A queue's counters at one moment, from [`SymQueue::snapshot`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSnapshot {
    /// The PE whose queue this is.
    pub pe: usize,
    /// Slots in the ring.
    pub capacity: u64,
    /// Tickets taken by producers (the first ticket included).
    pub tail: u64,
    /// Tickets taken by consumers.
    pub head: u64,
}

impl QueueSnapshot {
    /// Elements pushed (or being pushed) and not yet popped, `0..=capacity`.
    pub fn len(&self) -> u64 {
        (self.tail.wrapping_sub(self.head) as i64).clamp(0, self.capacity as i64) as u64
    }

    /// Whether [`Self::len`] is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Consumers waiting for elements not yet pushed (`head` past `tail`).
    pub fn waiting_consumers(&self) -> u64 {
        (self.head.wrapping_sub(self.tail) as i64).max(0) as u64
    }
}

impl fmt::Display for QueueSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "queue on PE {}: {} of {} slots full (tail {}, head {})",
            self.pe,
            self.len(),
            self.capacity,
            self.tail,
            self.head
        )?;
        match self.waiting_consumers() {
            0 => Ok(()),
            n => write!(f, ", {n} consumer(s) waiting"),
        }
    }
}

/// `RSHMEM_QUEUE_MAX_SPINS`, or 0 when unset.
fn max_spins_from_env() -> Result<u64, Error> {
    match std::env::var(MAX_SPINS_ENV) {
        Err(_) => Ok(0),
        Ok(v) => v.trim().parse().map_err(|_| Error::BadEnv {
            var: MAX_SPINS_ENV,
            value: v,
            expected: "a whole number of polls per queue wait (0: no bound)".into(),
        }),
    }
}

/// `T`'s name without module paths (`[u64; 8]`, `Item`).
fn short_type_name<T>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    let mut word = String::new();
    for c in full.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
        } else {
            out.push_str(word.rsplit("::").next().unwrap_or(""));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(word.rsplit("::").next().unwrap_or(""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_lose_their_paths() {
        assert_eq!(short_type_name::<u64>(), "u64");
        assert_eq!(short_type_name::<[u32; 3]>(), "[u32; 3]");
        assert_eq!(
            short_type_name::<Option<std::string::String>>(),
            "Option<String>"
        );
    }

    #[test]
    fn snapshots_count_elements_and_waiting_consumers() {
        let s = QueueSnapshot {
            pe: 1,
            capacity: 8,
            tail: (1 << 32) + 5,
            head: (1 << 32) - 1,
        };
        assert_eq!((s.len(), s.waiting_consumers()), (6, 0));
        assert_eq!(
            s.to_string(),
            "queue on PE 1: 6 of 8 slots full (tail 4294967301, head 4294967295)"
        );
        let waiting = QueueSnapshot {
            tail: 10,
            head: 13,
            ..s
        };
        assert_eq!((waiting.len(), waiting.waiting_consumers()), (0, 3));
        assert!(waiting.to_string().ends_with("3 consumer(s) waiting"));
    }
}
