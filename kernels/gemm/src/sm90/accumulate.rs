//! How the consumers accumulate a tile's k-steps: the [`Accumulate`] policy a mainloop is
//! given.
//!
//! * [`InTensorCore`]: every `wgmma` of the tile adds into the same accumulators (bf16/f16,
//!   and FP8 with one scale per tensor, applied by the epilogue: "fast accumulation").
//! * [`BlockScaled`]: DeepSeek-V3's FP8 block scaling. Each k-step (128 of K) is computed into
//!   fresh accumulators, then *promoted*: added into f32 registers times the step's scales, one
//!   per row of A and 128 of K, one per 128 x 128 block of B. So every 128 of K is summed by
//!   the tensor cores at most, and the scales never touch FP8 values, as DeepGEMM does.
//!
//! The scale layouts ([`BlockScales`]): A's `⌈K / 128⌉ x M` f32, M contiguous (row `kb`
//! holds every row of A's scale for K block `kb`: what a consumer thread reads for its rows
//! are neighbours, and the layout TMA would load, DeepGEMM's and `torch._scaled_mm`'s 1 x 128
//! scales); B's `G x ⌈N / 128⌉ x ⌈K / 128⌉` f32, row-major (one row per block of N: a
//! weight's blocks in its own order, one matrix per group).

use crate::tile::Tile;
use rshmem_device::KernelArg;

/// How a mainloop accumulates a tile's k-steps. Its methods say where the mainloop calls
/// them.
pub trait Accumulate: Copy {
    /// Whether each k-step is promoted: computed into fresh accumulators, then added into the
    /// tile's f32 registers times [`Accumulate::factors`] (false: the tensor cores accumulate
    /// every k-step into the same registers, and `factors` is never called).
    const PROMOTE: bool;

    /// The factors of k-step `kt` (of all K) for a consumer thread's two rows of C, `rows`
    /// (each below the problem's `m`: rows past it are clamped, their values never stored); called by
    /// every consumer thread once per k-step of a promoted tile, two k-steps before the
    /// step's stage is used (the loads' latency hides behind the wgmmas between).
    ///
    /// # Safety
    ///
    /// What the implementation requires (pointers valid for the problem).
    unsafe fn factors(&self, tile: Tile, kt: u32, rows: [u32; 2]) -> [f32; 2];
}

/// The tensor cores accumulate every k-step of a tile into the same registers.
#[derive(Clone, Copy, Debug, Default)]
pub struct InTensorCore;

impl Accumulate for InTensorCore {
    const PROMOTE: bool = false;

    #[inline(always)]
    unsafe fn factors(&self, _: Tile, _: u32, _: [u32; 2]) -> [f32; 2] {
        [1.0; 2]
    }
}

/// The scales of a block-scaled FP8 GEMM, a kernel argument (layouts: the module docs).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockScales {
    /// A's scales: `k_blocks` rows of `a_ld` f32 (`a_ld >= m`), scale of row `r` and K block
    /// `kb` at `a[kb * a_ld + r]`.
    pub a: *const f32,
    /// Elements between A's scale rows.
    pub a_ld: u32,
    /// `⌈K / 128⌉`.
    pub k_blocks: u32,
    /// B's scales: scale of group `g`'s N block `nb` and K block `kb` at
    /// `b[(g * n_blocks + nb) * k_blocks + kb]`.
    pub b: *const f32,
    /// `⌈N / 128⌉`.
    pub n_blocks: u32,
    /// Zero (no byte of a kernel argument is padding).
    pub _zero: u32,
}

// SAFETY: `#[repr(C)]` of two pointers and four `u32`s (32 bytes, no padding): the same bytes
// and meaning on the host and the device; what the pointers address is the kernel's contract.
unsafe impl KernelArg for BlockScales {}

/// DeepSeek-V3's block scaling (the module docs): k-steps of 128 promoted with the scales of
/// [`BlockScales`]. Its mainloop's tiles are 128 x 128 and its k-steps 128 (checked where the
/// mainloop is instantiated): one B scale per k-step of a tile.
#[derive(Clone, Copy, Debug)]
pub struct BlockScaled {
    /// The scales.
    pub scales: BlockScales,
}

impl BlockScaled {
    /// The policy over `scales`.
    ///
    /// # Safety
    ///
    /// `scales.a` holds `k_blocks` rows of `a_ld >= m` f32 and `scales.b` `G x n_blocks x
    /// k_blocks` (G the groups of a grouped GEMM, else 1), in global memory, not written while
    /// the kernel runs; `k_blocks = ⌈k / 128⌉`, `n_blocks = ⌈n / 128⌉` of the problem.
    #[inline(always)]
    pub const unsafe fn new(scales: BlockScales) -> Self {
        Self { scales }
    }
}

impl Accumulate for BlockScaled {
    const PROMOTE: bool = true;

    #[inline(always)]
    unsafe fn factors(&self, tile: Tile, kt: u32, rows: [u32; 2]) -> [f32; 2] {
        let s = self.scales;
        let nb = tile.n0 / 128;
        // SAFETY: `kt < k_blocks`, rows < m <= a_ld, `nb < n_blocks`, `group < G` (the
        // mainloop's bounds and `new`'s contract).
        unsafe {
            let b =
                *s.b.add(((tile.group * s.n_blocks + nb) * s.k_blocks + kt) as usize);
            let a = s.a.add((kt * s.a_ld) as usize);
            [*a.add(rows[0] as usize) * b, *a.add(rows[1] as usize) * b]
        }
    }
}
