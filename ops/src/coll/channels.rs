//! The collectives' state in an `Ops`: the loaded image, which PEs this one reaches through
//! peer mappings, the forced algorithm, and one channel (symmetric workspace) per stream.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use rshmem_coll::channel::{Channel, Shape};
use rshmem_coll::lamport;
use rshmem_device::shmem::Team;
use rshmem_host::{
    Backend, Error, LaunchConfig, Module, Result, Shmem, Stream, StreamKey, SymBuffer,
};

use super::plan::{self, Algorithm, Grid};

/// One stream's workspace.
struct Chan<'s> {
    buf: SymBuffer<'s, u8>,
    shape: Shape,
}

/// What `Ops` keeps for the collectives.
pub(crate) struct State<'s> {
    shmem: &'s Shmem,
    pub(crate) module: Module<'s>,
    /// Per world PE: reached through a peer mapping from this PE.
    mapped: Vec<bool>,
    pub(crate) shape: Shape,
    pub(crate) grid: Grid,
    /// Ordered, so that every PE frees them in the same order.
    channels: Mutex<BTreeMap<StreamKey, Chan<'s>>>,
    algorithm: Mutex<Algorithm>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update is complete before anything can panic: a poisoned lock is consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'s> State<'s> {
    /// Loads the image and finds out which PEs are peer-mapped (a probe kernel over a small
    /// symmetric buffer). Collective.
    pub(crate) fn new(shmem: &'s Shmem) -> Result<Self> {
        let module = shmem.load(&super::IMAGE)?;
        let world = shmem.n_pes();
        let mut probe = shmem.alloc_zeroed::<u32>(world)?;
        let threads = world.clamp(1, 256) as u32;
        // SAFETY: `probe` is symmetric with one u32 per world PE, as the kernel needs.
        unsafe {
            module.launch::<rshmem_ops_kernels::coll::coll_probe>(
                LaunchConfig::new(1, threads),
                (probe.as_mut_ptr(),),
            )?
        };
        let mapped = probe.to_vec()?.into_iter().map(|m| m != 0).collect();
        // Nobody may free the probe while a peer's kernel could still be looking at it (it
        // only translates addresses, but keep the heap symmetric in time as well).
        shmem.barrier_all()?;
        drop(probe);
        let shape = plan::channel_shape(world);
        Ok(State {
            shmem,
            module,
            mapped,
            shape,
            grid: Grid::new(shmem.backend(), shmem.device_info(), shape),
            channels: Mutex::new(BTreeMap::new()),
            algorithm: Mutex::new(Algorithm::Auto),
        })
    }

    pub(crate) fn algorithm(&self) -> Algorithm {
        *lock(&self.algorithm)
    }

    pub(crate) fn set_algorithm(&self, algorithm: Algorithm) {
        *lock(&self.algorithm) = algorithm;
    }

    /// Whether world PE `pe` is reached through a peer mapping.
    pub(crate) fn is_mapped(&self, pe: usize) -> bool {
        self.mapped.get(pe).copied().unwrap_or(false)
    }

    /// `stream`'s channel, made now if it has none: a symmetric allocation, so `all_pes`
    /// (the call's team holds every PE) must hold, or the message says what to do.
    pub(crate) fn channel(
        &self,
        call: &'static str,
        stream: &Stream<'_>,
        all_pes: bool,
    ) -> Result<Channel> {
        let mut channels = lock(&self.channels);
        if let Some(c) = channels.get_mut(&stream.key()) {
            return Ok(Channel::new(c.buf.as_mut_ptr(), c.shape));
        }
        if stream.is_capturing() {
            return Err(Error::InvalidArgument {
                call,
                message: format!(
                    "this stream ({:?}) records a graph and has no collective workspace yet: its \
                     workspace is a symmetric allocation, made by the stream's first collective, \
                     which a capture cannot record. Queue one collective on the stream (or call \
                     `ops.prepare_collectives(&stream)` on every PE) before capturing",
                    stream.key()
                ),
            });
        }
        if !all_pes {
            return Err(Error::InvalidArgument {
                call,
                message: format!(
                    "this is the first collective on this stream ({:?}) and its team does not \
                     hold every PE; a stream's collective workspace is a symmetric allocation \
                     that every PE must make. Call `ops.prepare_collectives(&stream)` on every PE \
                     first (or make the stream's first collective one over Team::WORLD)",
                    stream.key()
                ),
            });
        }
        let c = self.make_channel(call)?;
        let ch = Channel::new(c.buf.as_ptr().cast_mut(), c.shape);
        channels.insert(stream.key(), c);
        Ok(ch)
    }

    /// Makes `stream`'s channel if it has none. Collective over every PE.
    pub(crate) fn prepare(&self, stream: &Stream<'_>) -> Result<()> {
        self.channel("Ops::prepare_collectives", stream, true)
            .map(|_| ())
    }

    /// A fresh channel: zeroed flags and counts, empty flag-in-data slots.
    fn make_channel(&self, call: &'static str) -> Result<Chan<'s>> {
        let layout = self.shape.layout();
        let mut bytes = vec![0u8; layout.bytes];
        bytes[layout.lamport_offset..layout.lamport_offset + layout.lamport_bytes]
            .fill(lamport::EMPTY as u8);
        let buf = self.shmem.alloc_from(&bytes).map_err(|e| match e {
            Error::HeapExhausted { .. } | Error::HeapCannotGrow { .. } => Error::InvalidArgument {
                call,
                message: format!(
                    "a stream's collective workspace needs {} bytes of symmetric heap \
                         ({} PEs) and they do not fit: {e}",
                    layout.bytes, self.shape.world
                ),
            },
            e => e,
        })?;
        Ok(Chan {
            buf,
            shape: self.shape,
        })
    }

    /// This PE's rank in `team` and its size, or why it cannot call a collective over it.
    pub(crate) fn team(&self, call: &'static str, team: Team) -> Result<(usize, usize)> {
        match (self.shmem.team_my_pe(team), self.shmem.team_n_pes(team)) {
            (Some(rank), Some(n)) => Ok((rank, n)),
            _ => Err(Error::InvalidArgument {
                call,
                message: format!(
                    "this PE ({}) is not a member of team {} (or holds no such team): only a \
                     team's members call its collectives",
                    self.shmem.my_pe(),
                    team.raw()
                ),
            }),
        }
    }

    /// Whether every member of `team` (`n` PEs) is reached through a peer mapping and the
    /// team fits the peer-mapped blocks.
    pub(crate) fn team_mapped(&self, team: Team, n: usize) -> bool {
        n <= rshmem_coll::MAX_PEERS
            && (0..n).all(|r| {
                self.shmem
                    .team_translate_pe(team, r, Team::WORLD)
                    .is_some_and(|pe| self.is_mapped(pe))
            })
    }

    /// Whether this PE runs on the simulator.
    pub(crate) fn on_sim(&self) -> bool {
        self.shmem.backend() == Backend::Sim
    }
}
