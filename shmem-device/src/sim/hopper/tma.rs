//! Tensor maps in the simulator's layout, and the bulk tensor copies.

use core::cell::RefCell;
use core::sync::atomic::{
    fence, AtomicU8,
    Ordering::{Relaxed, SeqCst},
};
use std::format;
use std::vec::Vec;

use super::mbarrier::{push_landing, with_bar};
use super::state::Landing;
use super::{shared_offset, smem_read, smem_write, with, ThreadCtx};
use crate::contract::hopper::{Swizzle, TensorMap, TmaType};

/// Word 0 of a simulator tensor map: "RSHMTSIM".
const MAGIC: u64 = u64::from_le_bytes(*b"RSHMTSIM");

/// The parameters of a tiled tensor map, as the simulator reads them back.
#[derive(Clone, Copy, Debug)]
struct Map {
    ty: TmaType,
    global: u64,
    dims: [u64; 3],
    /// Byte strides of dimensions 1 and 2 (dimension 0 is dense).
    strides: [u64; 2],
    boxd: [u32; 3],
    swizzle: Swizzle,
}

impl Map {
    fn box_bytes(&self) -> usize {
        self.boxd.iter().map(|&b| b as usize).product::<usize>() * self.ty.size() as usize
    }

    /// The global address of element `c`, if it is inside the tensor.
    fn element(&self, c: [i64; 3]) -> Option<u64> {
        if (0..3).any(|d| c[d] < 0 || c[d] as u64 >= self.dims[d]) {
            return None;
        }
        Some(
            self.global
                + c[0] as u64 * self.ty.size() as u64
                + c[1] as u64 * self.strides[0]
                + c[2] as u64 * self.strides[1],
        )
    }

    /// Calls `f(byte offset in the box, element coordinates)` for each element of the box at
    /// `at`, in shared-memory order (dimension 0 fastest).
    fn each(&self, at: [i32; 3], mut f: impl FnMut(usize, [i64; 3])) {
        let e = self.ty.size() as usize;
        let mut i = 0;
        for z in 0..self.boxd[2] as i64 {
            for y in 0..self.boxd[1] as i64 {
                for x in 0..self.boxd[0] as i64 {
                    f(
                        i * e,
                        [at[0] as i64 + x, at[1] as i64 + y, at[2] as i64 + z],
                    );
                    i += 1;
                }
            }
        }
    }
}

/// Encodes a tiled tensor map in the simulator's layout. rshmem-host's `TensorMap` checks the
/// parameters (the same rules as `cuTensorMapEncodeTiled`) before calling this; `dims`, `boxd`
/// innermost first, unused dimensions 1; `strides` in bytes for dimensions 1 and 2.
pub fn encode_tensor_map(
    ty: TmaType,
    rank: u32,
    global: u64,
    dims: [u64; 3],
    strides: [u64; 2],
    boxd: [u32; 3],
    swizzle: Swizzle,
) -> TensorMap {
    let mut words = [0u64; 16];
    words[0] = MAGIC;
    words[1] = global;
    words[2] = ty as u64 | (rank as u64) << 8 | (swizzle as u64) << 16;
    words[3..6].copy_from_slice(&dims);
    words[6..8].copy_from_slice(&strides);
    words[8] = boxd[0] as u64 | (boxd[1] as u64) << 32;
    words[9] = boxd[2] as u64;
    TensorMap { words }
}

std::thread_local! {
    /// Per simulated thread: the maps it fenced, its bulk stores and their groups.
    static THREAD: RefCell<Bulk> = RefCell::new(Bulk::default());
}

#[derive(Default)]
struct Bulk {
    acquired: Vec<usize>,
    stores: Vec<Store>,
    committed: u64,
}

struct Store {
    map: Map,
    src: u32,
    at: [i32; 3],
    group: u64,
}

/// Reads the map at `p` (in global memory), checking that it is one of the simulator's.
fn read_map(c: &ThreadCtx<'_>, op: &str, p: *const TensorMap, rank: Option<u32>) -> Map {
    if p.is_null() || (p as usize) % 64 != 0 {
        c.fail(format!(
            "{op}: tensor map pointer {p:?} is null or not 64-byte aligned"
        ));
    }
    let word = |i: usize| {
        let mut b = [0u8; 8];
        for (j, v) in b.iter_mut().enumerate() {
            // SAFETY: the caller's contract: a tensor map in memory the kernel may read; read
            // as relaxed atomic bytes, so a concurrent write by a buggy kernel is no data race.
            *v = unsafe { AtomicU8::from_ptr(p.cast::<u8>().add(8 * i + j).cast_mut()) }
                .load(Relaxed);
        }
        u64::from_le_bytes(b)
    };
    let w2 = word(2);
    let ty = TmaType::from_code(w2 as u8);
    let r = (w2 >> 8) as u8 as u32;
    if word(0) != MAGIC || ty.is_none() || !(2..=3).contains(&r) {
        c.fail(format!(
            "{op}: the tensor map at {p:?} was not made for the simulator (made for a GPU, or \
             not a tensor map): make it with rshmem::TensorMap on the simulator's Shmem"
        ));
    }
    if let Some(want) = rank {
        if want != r {
            c.fail(format!(
                "{op}: the tensor map at {p:?} is {r}-D; this copy is {want}-D"
            ));
        }
    }
    Map {
        ty: ty.unwrap(),
        global: word(1),
        dims: [word(3), word(4), word(5)],
        strides: [word(6), word(7)],
        boxd: [word(8) as u32, (word(8) >> 32) as u32, word(9) as u32],
        swizzle: [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128]
            [((w2 >> 16) & 3) as usize],
    }
}

fn check_acquired(c: &ThreadCtx<'_>, op: &str, p: *const TensorMap) {
    if !THREAD.with(|t| t.borrow().acquired.contains(&(p as usize))) {
        c.fail(format!(
            "{op}: the tensor map at {p:?} is used before this thread called \
             tma::fence_tensormap_acquire on it (the GPU reads it through the tensormap proxy)"
        ));
    }
}

/// # Safety
///
/// No preconditions on the simulator (checked).
pub(crate) unsafe fn fence_tensormap_acquire(map: *const TensorMap) {
    let op = "tma::fence_tensormap_acquire";
    with(op, |c| {
        read_map(c, op, map, None);
        fence(SeqCst);
        THREAD.with(|t| t.borrow_mut().acquired.push(map as usize));
    })
}

/// # Safety
///
/// The copy's contract (`tma::load_2d`): the tensor is readable where the map says.
pub(crate) unsafe fn tma_load(
    map: *const TensorMap,
    dst: *mut u8,
    bar: *mut u64,
    at: [i32; 3],
    rank: u32,
) {
    let op = if rank == 2 {
        "tma::load_2d"
    } else {
        "tma::load_3d"
    };
    with(op, |c| {
        let m = read_map(c, op, map, Some(rank));
        check_acquired(c, op, map);
        let bytes = m.box_bytes();
        let d = shared_offset(c, op, "destination", dst, 0, 128);
        // The swizzled box occupies the same bytes as the plain one (chunks permute within
        // each 8 x span block, which the alignment checks below keep inside the box).
        shared_offset(c, op, "destination", dst, bytes, 128);
        // The barrier must exist before the copy is accepted.
        with_bar(c, op, bar, |_, _| ());
        let e = m.ty.size() as usize;
        let mut data = std::vec![0u8; bytes];
        m.each(at, |i, coords| {
            if let Some(g) = m.element(coords) {
                for k in 0..e {
                    // SAFETY: inside the tensor the map describes (the caller's contract).
                    data[i + k] =
                        unsafe { AtomicU8::from_ptr((g as usize + k) as *mut u8) }.load(Relaxed);
                }
            }
        });
        // Poison until the data lands (at a wait on `bar`).
        for j in 0..bytes.div_ceil(16) {
            smem_write(
                c,
                m.swizzle.apply(d + 16 * j as u32),
                &[0xFF; 16][..16.min(bytes - 16 * j)],
            );
        }
        push_landing(
            c,
            op,
            bar,
            Landing {
                dst: d,
                data,
                swizzle: m.swizzle,
            },
        );
    })
}

/// # Safety
///
/// The copy's contract (`tma::store_2d`).
pub(crate) unsafe fn tma_store(map: *const TensorMap, src: *const u8, at: [i32; 3], rank: u32) {
    let op = if rank == 2 {
        "tma::store_2d"
    } else {
        "tma::store_3d"
    };
    with(op, |c| {
        let m = read_map(c, op, map, Some(rank));
        check_acquired(c, op, map);
        let s = shared_offset(c, op, "source", src, m.box_bytes(), 128);
        THREAD.with(|t| {
            let mut t = t.borrow_mut();
            let group = t.committed;
            t.stores.push(Store {
                map: m,
                src: s,
                at,
                group,
            });
        })
    })
}

pub(crate) fn bulk_commit_group() {
    with("tma::commit_group", |_| {
        THREAD.with(|t| t.borrow_mut().committed += 1)
    })
}

/// Performs every store of a group older than the `N` most recent committed ones.
pub(crate) fn bulk_wait_group<const N: u32, const READ: bool>() {
    let op = if READ {
        "tma::wait_group_read"
    } else {
        "tma::wait_group"
    };
    with(op, |c| {
        let due: Vec<Store> = THREAD.with(|t| {
            let mut t = t.borrow_mut();
            let limit = t.committed.saturating_sub(N as u64);
            let (due, keep) = core::mem::take(&mut t.stores)
                .into_iter()
                .partition(|s| s.group < limit);
            t.stores = keep;
            due
        });
        for s in due {
            let m = s.map;
            let bytes = m.box_bytes();
            let mut data = std::vec![0u8; bytes];
            for (j, chunk) in data.chunks_mut(16).enumerate() {
                smem_read(c, m.swizzle.apply(s.src + 16 * j as u32), chunk);
            }
            let e = m.ty.size() as usize;
            m.each(s.at, |i, coords| {
                if let Some(g) = m.element(coords) {
                    for k in 0..e {
                        // SAFETY: inside the tensor the map describes (the store's contract).
                        unsafe { AtomicU8::from_ptr((g as usize + k) as *mut u8) }
                            .store(data[i + k], Relaxed);
                    }
                }
            });
        }
        fence(SeqCst);
    })
}
