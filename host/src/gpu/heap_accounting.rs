//! rshmem's own accounting of NVSHMEM's symmetric heap, so that a collective allocation that
//! cannot succeed is refused — identically on every PE — before `nvshmem_malloc` is called.
//!
//! Why not just call `nvshmem_malloc` and look at the result: a size mismatch across PEs is
//! not detected by NVSHMEM (unless `NVSHMEM_ENABLE_ERROR_CHECKS`), silently breaking symmetry;
//! and on the growable heap a failed growth tears the whole heap down while the other PEs wait
//! in a barrier. So every allocation first exchanges `(requested, room)` between all PEs and
//! every PE applies [`decide`] to the same data.
//!
//! Which heap NVSHMEM 3.4.5 uses (`src/host/init/init.cu`, `src/host/mem/mem_heap.cpp`):
//! * **growable** (CUDA VMM; the default where the GPU supports VMM and GPUDirect RDMA with
//!   VMM, e.g. H100/H200): physical memory is mapped on demand, up to
//!   `NVSHMEM_MAX_MEMORY_PER_GPU` (default 128 GiB); `NVSHMEM_SYMMETRIC_SIZE` plays no part;
//! * **static** (`NVSHMEM_DISABLE_CUDA_VMM` set true, `NVSHMEM_HEAP_KIND=SYSMEM`, or no VMM):
//!   `NVSHMEM_SYMMETRIC_SIZE` (default 1 GiB) reserved at start-up.
//!
//! Allocations are rounded up to NVSHMEM's 512-byte chunk alignment. NVSHMEM's own internal
//! allocations are not seen here, so "room" is an upper bound that errs on the side of
//! letting NVSHMEM decide.

use crate::contract::{Error, Result};
use crate::size::parse_size;
use std::collections::HashMap;
use std::ffi::OsString;

/// `NVSHMEMI_MALLOC_ALIGNMENT`: every heap chunk is a multiple of this.
pub(crate) const CHUNK_ALIGN: usize = 512;

/// `SYMMETRIC_SIZE_DEFAULT` in NVSHMEM 3.4.5.
const DEFAULT_SYMMETRIC_SIZE: usize = 1 << 30;

/// `NVSHMEM_MAX_MEMORY_PER_GPU`'s default in NVSHMEM 3.4.5.
const DEFAULT_MAX_MEMORY_PER_GPU: usize = 128 << 30;

const SIZE_SYNTAX: &str =
    "a byte count with an optional k, M, G or T suffix (powers of 1024), e.g. 4G, 512M or 1.5G";

/// NVSHMEM's boolean environment rule: set and not starting with `0`, `n`, `N`, `f` or `F`.
fn nvshmem_bool(value: &OsString) -> bool {
    !matches!(
        value.as_encoded_bytes().first(),
        Some(b'0' | b'n' | b'N' | b'f' | b'F')
    )
}

/// How large the symmetric heap can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HeapLimit {
    /// Reserved at start-up: `NVSHMEM_SYMMETRIC_SIZE` bytes.
    Static { size: usize },
    /// Grows on demand up to `NVSHMEM_MAX_MEMORY_PER_GPU` bytes (and the GPU's memory).
    Growable { max: usize },
}

/// Which heap NVSHMEM will use and its limit, from the environment and whether the GPU
/// supports VMM with GPUDirect RDMA (NVSHMEM's `nvshmemi_is_vmm_supported`).
pub(crate) fn heap_limit(
    env: &dyn Fn(&str) -> Option<OsString>,
    vmm_supported: bool,
) -> Result<HeapLimit> {
    let size_var = |name: &'static str, default: usize| match env(name) {
        None => Ok(default),
        Some(raw) => {
            let value = raw.to_string_lossy().into_owned();
            parse_size(&value).ok_or(Error::InvalidEnv {
                name,
                value,
                expected: SIZE_SYNTAX,
            })
        }
    };
    let sysmem = env("NVSHMEM_HEAP_KIND")
        .is_some_and(|k| k.to_string_lossy().eq_ignore_ascii_case("SYSMEM"));
    let vmm_disabled = env("NVSHMEM_DISABLE_CUDA_VMM").is_some_and(|v| nvshmem_bool(&v));
    if sysmem || vmm_disabled || !vmm_supported {
        Ok(HeapLimit::Static {
            size: size_var("NVSHMEM_SYMMETRIC_SIZE", DEFAULT_SYMMETRIC_SIZE)?,
        })
    } else {
        Ok(HeapLimit::Growable {
            max: size_var("NVSHMEM_MAX_MEMORY_PER_GPU", DEFAULT_MAX_MEMORY_PER_GPU)?,
        })
    }
}

/// Bytes a request takes on the heap.
fn chunk(bytes: u64) -> Option<u64> {
    bytes.checked_next_multiple_of(CHUNK_ALIGN as u64)
}

/// Applied by every PE to the same `(requested, room)` pairs, one per PE in PE order: `Ok` if
/// every PE asked for the same size and every PE has room for it.
pub(crate) fn decide(my_pe: usize, offers: &[[u64; 2]], limit: HeapLimit) -> Result<()> {
    let mine = offers[my_pe][0];
    let others: Vec<(usize, usize)> = offers
        .iter()
        .enumerate()
        .filter(|(_, o)| o[0] != mine)
        .map(|(pe, o)| (pe, o[0] as usize))
        .collect();
    if !others.is_empty() {
        return Err(Error::AsymmetricAlloc {
            pe: my_pe,
            mine: mine as usize,
            others,
        });
    }
    let Some((tightest, &[_, room])) = offers.iter().enumerate().min_by_key(|(_, o)| o[1]) else {
        return Ok(());
    };
    if chunk(mine).is_some_and(|need| need <= room) {
        return Ok(());
    }
    Err(match limit {
        HeapLimit::Static { size } => Error::HeapExhausted {
            var: "NVSHMEM_SYMMETRIC_SIZE",
            requested: mine as usize,
            available: room as usize,
            heap_size: size,
        },
        HeapLimit::Growable { max } => Error::HeapCannotGrow {
            requested: mine as usize,
            pe: tightest,
            available: room as usize,
            limit: max,
        },
    })
}

/// What this PE has allocated on the heap.
#[derive(Debug, Default)]
pub(crate) struct Accounting {
    /// Sum of live chunks.
    allocated: usize,
    /// Most ever allocated at once: on the growable heap NVSHMEM keeps memory mapped after a
    /// free, so up to this much can be reused without growing.
    high_water: usize,
    live: HashMap<u64, usize>,
}

impl Accounting {
    /// Bytes this PE can still allocate. `device_free` is the GPU's free memory, which bounds
    /// the growable heap's growth.
    pub(crate) fn room(&self, limit: HeapLimit, device_free: usize) -> usize {
        match limit {
            HeapLimit::Static { size } => size.saturating_sub(self.allocated),
            HeapLimit::Growable { max } => {
                let mapped_unused = self.high_water - self.allocated;
                max.saturating_sub(self.allocated)
                    .min(device_free.saturating_add(mapped_unused))
            }
        }
    }

    /// Records a live allocation of `bytes` at `addr`.
    pub(crate) fn allocated(&mut self, addr: u64, bytes: usize) {
        let size = chunk(bytes as u64).map_or(usize::MAX, |c| c as usize);
        self.live.insert(addr, size);
        self.allocated += size;
        self.high_water = self.high_water.max(self.allocated);
    }

    /// Records that `addr` was freed; `false` if it was not a live allocation.
    pub(crate) fn freed(&mut self, addr: u64) -> bool {
        match self.live.remove(&addr) {
            Some(size) => {
                self.allocated -= size;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).into())
        }
    }

    #[test]
    fn picks_the_heap_nvshmem_will_use() {
        assert_eq!(
            heap_limit(&env(&[]), true).unwrap(),
            HeapLimit::Growable { max: 128 << 30 }
        );
        assert_eq!(
            heap_limit(&env(&[("NVSHMEM_SYMMETRIC_SIZE", "4G")]), false).unwrap(),
            HeapLimit::Static { size: 4 << 30 }
        );
        assert_eq!(
            heap_limit(&env(&[("NVSHMEM_DISABLE_CUDA_VMM", "1")]), true).unwrap(),
            HeapLimit::Static { size: 1 << 30 }
        );
        assert_eq!(
            heap_limit(&env(&[("NVSHMEM_DISABLE_CUDA_VMM", "false")]), true).unwrap(),
            HeapLimit::Growable { max: 128 << 30 }
        );
        assert_eq!(
            heap_limit(&env(&[("NVSHMEM_HEAP_KIND", "sysmem")]), true).unwrap(),
            HeapLimit::Static { size: 1 << 30 }
        );
        let err = heap_limit(&env(&[("NVSHMEM_SYMMETRIC_SIZE", "lots")]), false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("NVSHMEM_SYMMETRIC_SIZE=\"lots\"") && err.contains("4G"),
            "{err}"
        );
    }

    #[test]
    fn asymmetric_sizes_fail_on_every_pe_naming_the_others() {
        let offers = [[64, 1 << 20], [64, 1 << 20], [128, 1 << 20]];
        for pe in 0..3 {
            assert!(matches!(
                decide(pe, &offers, HeapLimit::Static { size: 1 << 20 }),
                Err(Error::AsymmetricAlloc { .. })
            ));
        }
        let msg = decide(0, &offers, HeapLimit::Static { size: 1 << 20 })
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("PE (0) asked for 64") && msg.contains("PE 2 asked for 128"),
            "{msg}"
        );
    }

    #[test]
    fn exhaustion_is_decided_by_the_tightest_pe() {
        let limit = HeapLimit::Static { size: 4096 };
        assert!(decide(1, &[[1000, 1024], [1000, 4096]], limit).is_ok());
        // 1025 bytes take two 512-byte chunks.
        let msg = decide(1, &[[1025, 1024], [1025, 4096]], limit)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("requested 1025 bytes, 1024 bytes left of a 4096-byte heap")
                && msg.contains("NVSHMEM_SYMMETRIC_SIZE"),
            "{msg}"
        );
        let grow = HeapLimit::Growable { max: 1 << 30 };
        let msg = decide(0, &[[4096, 8192], [4096, 2048]], grow)
            .unwrap_err()
            .to_string();
        assert!(
            msg.contains("PE 1 can add at most 2048") && msg.contains("NVSHMEM_MAX_MEMORY_PER_GPU"),
            "{msg}"
        );
        assert!(decide(0, &[[0, 0], [0, 0]], grow).is_ok());
        assert!(decide(0, &[[u64::MAX, u64::MAX]], grow).is_err());
    }

    #[test]
    fn accounting_tracks_chunks_and_reusable_memory() {
        let mut acc = Accounting::default();
        let limit = HeapLimit::Static { size: 4096 };
        acc.allocated(0x1000, 100);
        assert_eq!(acc.room(limit, 0), 4096 - 512);
        assert!(acc.freed(0x1000));
        assert!(!acc.freed(0x1000));
        assert_eq!(acc.room(limit, 0), 4096);

        let grow = HeapLimit::Growable { max: 1 << 20 };
        acc.allocated(0x2000, 8192);
        assert!(acc.freed(0x2000));
        // The freed 8 KiB stays mapped, so it counts even when the GPU has nothing free.
        assert_eq!(acc.room(grow, 0), 8192);
        assert_eq!(acc.room(grow, 1 << 30), 1 << 20);
    }
}
