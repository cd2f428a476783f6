//! [`MoeCall`] (what every kernel of a dispatch or combine is told about it) and [`MoeBufs`]
//! (where its buffers are), both kernel arguments, and the layout of each buffer.
//!
//! Experts are numbered `0 .. experts` across the team: rank `d` holds experts
//! `d × local .. (d + 1) × local` (`local = experts / size`), its *local* experts `0 .. local`.
//!
//! ```
//! use rshmem_moe::MoeCall;
//! // 4 PEs, 32 experts (8 each), top-2, 512 tokens at most per PE.
//! let call = MoeCall::new((32, 2, 1024), (512, 16), 4, 7);
//! assert_eq!((call.local_experts(), call.owner(17), call.local(17)), (8, 2, 1));
//! assert_eq!(call.record_words(), 7);
//! assert_eq!(call.capacity(), 4 * 512 * 2 + 8 * 15);
//! // bf16 rows of 1024 elements are staged as 2048 bytes; FP8 ones as 1024 bytes and 8 scales.
//! assert_eq!((call.staged_bytes(), call.with_fp8().staged_bytes()), (2048, 1024 + 32));
//! ```

use rshmem_coll::tile;
use rshmem_device::KernelArg;

/// "No value" in the u32 words of the buffers: a token not sent to a rank, a record entry
/// for an expert of another rank, a padding row's source.
pub const NONE: u32 = u32::MAX;

/// One dispatch (and the combine that follows it) as its kernels see it.
///
/// * `experts` (a multiple of the team's size), `top_k`, `hidden`: the layer's shape;
/// * `tokens`: this PE's tokens in the call (`<= max_tokens`);
/// * `max_tokens`: every PE's most tokens per call, what the buffers hold; `align`: each
///   expert's rows on its PE are padded to a multiple of it (what the grouped GEMM's tiles
///   want);
/// * `size`: the team's PEs (the kernels take the [`Team`](rshmem_device::shmem::Team) too);
/// * `elem_bytes`, `scales`: what a token's row is — `hidden` elements of `elem_bytes` bytes
///   (2: bf16; 1: FP8 e4m3, moved as bytes) and `scales` f32 scale factors beside them (0
///   for bf16; one per 128 elements for FP8), which travel with the row and land in
///   `recv_scales`;
/// * `epoch`: the dispatch's number on these buffers, 1, 2, ... from the host, the same on
///   every PE (the calls are collective); the flags a call sets hold it and every wait is for
///   `>= epoch`, so flags are never reset.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoeCall {
    /// Experts across the team.
    pub experts: u32,
    /// Experts per token (`-1` entries of `topk_idx` stand for none).
    pub top_k: u32,
    /// Elements per token row.
    pub hidden: u32,
    /// This PE's tokens.
    pub tokens: u32,
    /// Most tokens per PE and call.
    pub max_tokens: u32,
    /// Rows per expert are padded to a multiple of this.
    pub align: u32,
    /// PEs in the team.
    pub size: u32,
    /// Bytes per element of a row (2 or 1).
    pub elem_bytes: u32,
    /// f32 scales per row (0: none).
    pub scales: u32,
    /// Keeps the layout free of padding (a `KernelArg` requirement).
    pub reserved: u32,
    /// The call's number (see the type's docs).
    pub epoch: u64,
}

// SAFETY: `#[repr(C)]` of ten `u32` and a `u64` (48 bytes, 8-aligned, no padding): the same
// bytes and meaning on the host and the device.
unsafe impl KernelArg for MoeCall {}

impl MoeCall {
    /// The call of `(experts, top_k, hidden)` with `(max_tokens, align)` over `size` PEs,
    /// for `epoch`, of bf16 rows; `tokens` is set per call with [`MoeCall::with_tokens`], FP8
    /// rows with [`MoeCall::with_fp8`].
    pub const fn new(
        (experts, top_k, hidden): (u32, u32, u32),
        (max_tokens, align): (u32, u32),
        size: u32,
        epoch: u64,
    ) -> Self {
        Self {
            experts,
            top_k,
            hidden,
            tokens: 0,
            max_tokens,
            align,
            size,
            elem_bytes: 2,
            scales: 0,
            reserved: 0,
            epoch,
        }
    }

    /// The call with FP8 rows: one byte per element and one f32 scale per 128 of them.
    pub const fn with_fp8(self) -> Self {
        Self {
            elem_bytes: 1,
            scales: self.hidden.div_ceil(128),
            ..self
        }
    }

    /// Bytes of a row's elements (what `x` and `recv_x` hold per row).
    #[inline(always)]
    pub const fn data_bytes(&self) -> u32 {
        self.hidden * self.elem_bytes
    }

    /// Where a staged row's scales start, in bytes (16-aligned, after the elements).
    #[inline(always)]
    pub const fn scales_offset(&self) -> u32 {
        self.data_bytes().next_multiple_of(16)
    }

    /// Bytes of one staged row (the elements, then the scales), a multiple of 16 so that
    /// every row starts 16-byte aligned.
    #[inline(always)]
    pub const fn staged_bytes(&self) -> u32 {
        (self.scales_offset() + 4 * self.scales).next_multiple_of(16)
    }

    /// Pushes token `t`'s row — its `data_bytes` of `x`, and for FP8 its `scales` f32 of
    /// `scales` after them at [`MoeCall::scales_offset`] — into the staged row `dst` on PE
    /// `pe` (`rshmem_coll::tile::push_tile`: stores through the peer mapping, or puts). Both
    /// modes stage rows so; every thread of the block calls it.
    ///
    /// # Safety
    ///
    /// `x` holds row `t` (`data_bytes` per row) and `scales` its `self.scales` f32 (`t ×
    /// scales` on; unused when 0), in symmetric memory where `pe` has no mapping; `dst` is a
    /// staged row (`staged_bytes`) of a symmetric buffer that nothing else writes meanwhile;
    /// `pe` a PE of the job.
    #[inline(always)]
    pub unsafe fn push_staged(
        &self,
        dst: *mut u8,
        x: *const u8,
        scales: *const f32,
        t: u32,
        pe: i32,
    ) {
        let (data, ns) = (self.data_bytes() as usize, self.scales as usize);
        // SAFETY: the caller's.
        unsafe {
            tile::push_tile(dst, x.add(t as usize * data), data, pe);
            if ns > 0 {
                let at = dst.add(self.scales_offset() as usize).cast::<f32>();
                tile::push_tile(at, scales.add(t as usize * ns), ns, pe);
            }
        }
    }

    /// Copies the staged row `src` (what [`MoeCall::push_staged`] left) into the received
    /// rows `x[r]` (`data_bytes` each, up to [`rshmem_coll::MAX_PEERS`] of them; null ones
    /// skipped), each pack of it loaded once, and its scales (if any) to
    /// `scales[r][i × scale_step]`, `scale_step` the received rows' count (the FP8 grouped
    /// GEMM's layout for A, where a K block's scales of every row are contiguous). Every thread
    /// of the block calls it.
    ///
    /// # Safety
    ///
    /// `src` a staged row (`staged_bytes`), whose writes this thread has acquired; each
    /// non-null `x[r]` valid for `data_bytes` writes and `scales[r]` for `self.scales` at that
    /// step; nothing else writes them meanwhile.
    #[inline(always)]
    pub unsafe fn receive_staged<const N: usize>(
        &self,
        src: *const u8,
        x: &[*mut u8; N],
        scales: &[*mut f32; N],
        scale_step: usize,
    ) {
        // SAFETY: the caller's.
        unsafe {
            tile::fan_out(x, src, self.data_bytes() as usize);
            let from = src.add(self.scales_offset() as usize).cast::<f32>();
            let (first, threads) = tile::block_lanes();
            let mut i = first;
            while i < self.scales as usize {
                let v = from.add(i).read();
                for (row, at) in x.iter().zip(scales) {
                    if !row.is_null() {
                        at.add(i * scale_step).write(v);
                    }
                }
                i += threads;
            }
        }
    }

    /// The call with this PE's token count.
    pub const fn with_tokens(self, tokens: u32) -> Self {
        Self { tokens, ..self }
    }

    /// Experts per rank.
    #[inline(always)]
    pub const fn local_experts(&self) -> u32 {
        self.experts / self.size
    }

    /// The rank that holds expert `e`.
    #[inline(always)]
    pub const fn owner(&self, e: u32) -> u32 {
        e / self.local_experts()
    }

    /// Expert `e`'s number among its rank's experts.
    #[inline(always)]
    pub const fn local(&self, e: u32) -> u32 {
        e % self.local_experts()
    }

    /// A `topk` entry's expert, or `None` for `-1` (no expert) and for a bad entry outside
    /// `-1 .. experts` (which every step skips and [`crate::route`] reports).
    #[inline(always)]
    pub const fn expert(&self, e: i32) -> Option<u32> {
        if e >= 0 && (e as u32) < self.experts {
            Some(e as u32)
        } else {
            None
        }
    }

    /// Words of one token's record (see [`MoeBufs::meta`]): the token's index, then per
    /// top-k entry its local expert ([`NONE`] if on another rank), its position among the
    /// sender's rows for that expert and its router weight's bits.
    #[inline(always)]
    pub const fn record_words(&self) -> u32 {
        1 + 3 * self.top_k
    }

    /// Words of one rank's count row (see [`MoeBufs::counts_in`]): its tokens, then its rows
    /// per local expert.
    #[inline(always)]
    pub const fn count_words(&self) -> u32 {
        1 + self.local_experts()
    }

    /// The most rows this PE's experts can receive, padding included: every rank's every
    /// token for up to `min(top_k, local)` of them, and `align - 1` padding rows per expert.
    #[inline(always)]
    pub const fn capacity(&self) -> u32 {
        let per_token = if self.top_k < self.local_experts() {
            self.top_k
        } else {
            self.local_experts()
        };
        self.size * self.max_tokens * per_token + self.local_experts() * (self.align - 1)
    }
}

/// The words of [`MoeBufs::layout`] (this PE's receive layout, made by
/// [`crate::dispatch::layout`]), for `size` ranks and `local` experts: offsets of each part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayoutWords {
    /// `[local]`: expert `j`'s first row in the received rows (padded starts).
    pub expert_base: usize,
    /// `[local]`: expert `j`'s real rows (without padding).
    pub expert_rows: usize,
    /// `[size × local]`: rank `s`'s first row within expert `j`'s rows, at `s × local + j`.
    pub src_base: usize,
    /// `[size]`: rank `s`'s first record among the received tokens (in rank order).
    pub token_base: usize,
    /// `[2]`: the received tokens, then the rows, padding included.
    pub totals: usize,
    /// `[1]`: the first bad `topk_idx` entry this PE saw (`t × top_k + kk`), or [`NONE`].
    pub bad_entry: usize,
    /// Words in all.
    pub words: usize,
}

impl LayoutWords {
    /// The layout for `size` ranks and `local` experts per rank.
    pub const fn new(size: u32, local: u32) -> Self {
        let (size, local) = (size as usize, local as usize);
        let expert_rows = local;
        let src_base = expert_rows + local;
        let token_base = src_base + size * local;
        let totals = token_base + size;
        let bad_entry = totals + 2;
        Self {
            expert_base: 0,
            expert_rows,
            src_base,
            token_base,
            totals,
            bad_entry,
            words: bad_entry + 1,
        }
    }
}

/// Where one dispatch's buffers are, on this PE (a kernel argument). "Symmetric" buffers are
/// written by other ranks (or read by NVSHMEM's puts as sources); the rest only by this PE.
/// `R` = `max_tokens`, `H` = `hidden`, `W` = [`MoeCall::record_words`].
///
/// | buffer | elements | what |
/// |---|---|---|
/// | `flags` (symmetric) | `3 × size` | per sender rank `s`: its barrier, data and combine flags (epochs) |
/// | `counts_in` (symmetric) | `size × count_words` | row `s`: what rank `s` sent here (tokens, rows per local expert) |
/// | `staging` (symmetric) | `size × R` rows of `staged_bytes` | row `s × R + slot`: rank `s`'s token in its slot, its scales after it |
/// | `meta` (symmetric) | `size × R × W` | the same rows' records (token index; per entry local expert, position, weight) |
/// | `combine_recv` (symmetric) | `size × R × H` f32 | row `p × R + t`: rank `p`'s weighted partial of this PE's token `t` |
/// | `send_slot` | `R × size` | token `t`'s slot in rank `d`'s region from here, or [`NONE`] |
/// | `pos` | `R × top_k` | entry `(t, kk)`'s position among this PE's rows for its expert |
/// | `counts_out` (symmetric: a put source) | `size × count_words` | row `d`: what this PE sends rank `d` |
/// | `route_blocks` | [`crate::route::blocks_words`] | the routing's counts per block ([`crate::route::count`]) |
/// | `meta_out` (symmetric: a put source) | `R × size × W` | the record of token `t` for rank `d` |
/// | `combine_stage` (symmetric: a put source) | `size × R × H` f32 | the partials before they are sent back |
/// | `layout` | [`LayoutWords::words`] | this PE's receive layout |
/// | `recv_x` | `capacity` rows of `data_bytes` | the received rows, grouped by local expert, padded with zero rows |
/// | `recv_scales` | `scales × capacity` f32 | their scales, row `r`'s of K block `kb` at `kb × capacity + r` (the FP8 grouped GEMM's layout for A; none for bf16 rows) |
/// | `recv_src` | `capacity × 2` | each row's source rank and token ([`NONE`] for padding) |
/// | `recv_w` | `capacity` | each row's router weight (0 for padding) |
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MoeBufs {
    /// See the type's docs.
    pub flags: *mut u64,
    /// See the type's docs.
    pub counts_in: *mut u32,
    /// See the type's docs.
    pub staging: *mut u8,
    /// See the type's docs.
    pub meta: *mut u32,
    /// See the type's docs.
    pub combine_recv: *mut f32,
    /// See the type's docs.
    pub send_slot: *mut u32,
    /// See the type's docs.
    pub pos: *mut u32,
    /// See the type's docs.
    pub counts_out: *mut u32,
    /// See the type's docs.
    pub route_blocks: *mut u32,
    /// See the type's docs.
    pub meta_out: *mut u32,
    /// See the type's docs.
    pub combine_stage: *mut f32,
    /// See the type's docs.
    pub layout: *mut u32,
    /// See the type's docs.
    pub recv_x: *mut u8,
    /// See the type's docs.
    pub recv_scales: *mut f32,
    /// See the type's docs.
    pub recv_src: *mut u32,
    /// See the type's docs.
    pub recv_w: *mut f32,
}

// SAFETY: `#[repr(C)]` of sixteen pointers (128 bytes, no padding): the same bytes on the
// host and nvptx64 (both 64-bit); the kernels' contracts say what they must point to.
unsafe impl KernelArg for MoeBufs {}

/// What [`crate::route`] writes: `pos` (`R × top_k`), `send_slot` (`R × size`), `counts_out`
/// (`size × count_words`) and the bad-entry word (see [`MoeBufs`]).
#[derive(Clone, Copy, Debug)]
pub struct RouteBufs {
    /// See [`MoeBufs::pos`].
    pub pos: *mut u32,
    /// See [`MoeBufs::send_slot`].
    pub send_slot: *mut u32,
    /// See [`MoeBufs::counts_out`].
    pub counts_out: *mut u32,
    /// The first bad `topk_idx` entry ([`LayoutWords::bad_entry`]).
    pub bad_entry: *mut u32,
    /// The counts per block of a grid of more than one ([`crate::route::count`]).
    pub blocks: *mut u32,
}

impl MoeBufs {
    /// The routing's part of the buffers.
    #[inline(always)]
    pub fn route(&self, call: &MoeCall) -> RouteBufs {
        let words = LayoutWords::new(call.size, call.local_experts());
        RouteBufs {
            pos: self.pos,
            send_slot: self.send_slot,
            counts_out: self.counts_out,
            bad_entry: self.layout.wrapping_add(words.bad_entry),
            blocks: self.route_blocks,
        }
    }
}

/// The flag word where rank `s` signals that it has started call `epoch` ([`crate::barrier`]).
pub const fn barrier_slot(s: u32) -> usize {
    3 * s as usize
}

/// The flag word where rank `s` signals that its tokens (and counts) for this PE are here.
pub const fn data_slot(s: u32) -> usize {
    3 * s as usize + 1
}

/// The flag word where rank `s` signals that its partials of this PE's tokens are here.
pub const fn combine_slot(s: u32) -> usize {
    3 * s as usize + 2
}

/// Words of the flag buffer for `size` ranks.
pub const fn flag_words(size: u32) -> usize {
    3 * size as usize
}

/// The most entries a token has in `topk` (`MoeCall::top_k`; the host checks it).
pub const MAX_TOP_K: u32 = 16;

/// The rank mask of token `t`'s valid entries of `topk` (one bit per destination rank; bad
/// entries, outside `-1 .. experts`, are left out: [`crate::route`] reports them).
///
/// # Safety
///
/// `topk` holds `top_k` (at most [`MAX_TOP_K`]) entries of token `t`.
#[inline(always)]
pub unsafe fn destinations(call: &MoeCall, topk: *const i32, t: u32) -> u64 {
    // Every entry loaded before any is looked at: one round trip to memory, not `top_k` (a
    // loop that branches on each entry before loading the next makes a chain of them).
    let row = (t * call.top_k) as usize;
    let entries: [i32; MAX_TOP_K as usize] = core::array::from_fn(|kk| {
        if (kk as u32) < call.top_k {
            // SAFETY: entry kk < top_k of token t (the caller's).
            unsafe { topk.add(row + kk).read() }
        } else {
            -1
        }
    });
    entries
        .into_iter()
        .filter_map(|e| call.expert(e))
        .fold(0, |mask, e| mask | 1u64 << call.owner(e))
}
