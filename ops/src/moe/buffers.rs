//! [`MoeBuffers`]: the symmetric buffers one MoE layer's dispatches and combines run in, made
//! once ([`crate::Ops::moe_buffers`], collective) for a [`MoeConfig`]; [`MoeLayout`]: what a
//! dispatch left, as the host reads it.

use rshmem_device::bf16;
use rshmem_host::{Error, Result, Shmem, SymBuffer, Team};
use rshmem_moe::call::{flag_words, LayoutWords, MAX_TOP_K};
use rshmem_moe::{route, MoeBufs, MoeCall};

/// The most ranks a team of the MoE ops may have (a token's ranks are a 64-bit mask).
pub const MAX_RANKS: usize = 64;

/// What a dispatched row holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MoePayload {
    /// `hidden` bf16 elements ([`crate::Ops::moe_dispatch`]).
    #[default]
    Bf16,
    /// `hidden` FP8 e4m3 elements (as bytes) and one f32 scale per 128 of them, `x[t][i] ≈
    /// e4m3(bytes[t][i]) × scales[t][i / 128]` ([`crate::Ops::moe_dispatch_fp8`]): half the
    /// bytes on the link; the rows land as they were sent, their scales in the FP8 grouped
    /// GEMM's layout for A.
    Fp8E4m3,
}

/// The shape of an MoE layer's dispatches, the same on every PE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoeConfig {
    /// Experts across the team: a multiple of its size (each rank holds `experts / size`).
    pub experts: u32,
    /// Experts per token (entries of `topk_idx` per token), at most 16.
    pub top_k: u32,
    /// Elements per token row.
    pub hidden: u32,
    /// The most tokens any PE dispatches in one call.
    pub max_tokens: u32,
    /// Each expert's rows are padded with zero rows to a multiple of this (the grouped GEMM's
    /// tile rows; 1 for none).
    pub align: u32,
    /// What a dispatched row holds (the combine's rows are bf16 either way).
    pub payload: MoePayload,
}

/// What a dispatch left on this PE: where each local expert's rows are in
/// [`MoeBuffers::recv_x`] (or `recv_x_fp8`). Pass it to the combine of the same dispatch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoeLayout {
    /// The dispatch's number on its buffers (1, 2, ...).
    pub epoch: u64,
    /// This PE's tokens in the dispatch.
    pub tokens: u32,
    /// Tokens this PE received (each once, however many of its experts are here).
    pub tokens_received: u32,
    /// Per local expert, its first row (0, then the padded ends).
    pub expert_offsets: Vec<u32>,
    /// Per local expert, its rows (without padding).
    pub expert_rows: Vec<u32>,
    /// Rows in all, padding included: the rows of `recv_x` the dispatch wrote.
    pub rows: u32,
}

impl MoeLayout {
    /// The local experts' rows as a grouped GEMM's groups by offsets (`GroupRows::Offsets`'
    /// `ends`): expert `j`'s group ends at its offset plus its rows, so the zero padding before
    /// an expert's rows joins its group (and computes zero rows the combine never reads).
    ///
    /// ```
    /// # use rshmem_ops::MoeLayout;
    /// let layout = MoeLayout { epoch: 1, tokens: 5, tokens_received: 5, expert_offsets: vec![0, 8],
    ///     expert_rows: vec![3, 4], rows: 16 };
    /// assert_eq!(layout.group_ends(), [3, 12]);
    /// ```
    pub fn group_ends(&self) -> Vec<u32> {
        self.expert_offsets
            .iter()
            .zip(&self.expert_rows)
            .map(|(o, r)| o + r)
            .collect()
    }
}

/// The received rows, of the payload's type (both modes' buffers hold them so).
pub(super) enum Recv<'s> {
    /// `rows × hidden` bf16.
    Bf16(SymBuffer<'s, bf16>),
    /// `rows × hidden` e4m3 bytes, and `rows × ⌈hidden / 128⌉` f32 scales (their order is
    /// the mode's).
    Fp8(SymBuffer<'s, u8>, SymBuffer<'s, f32>),
}

impl<'s> Recv<'s> {
    /// Allocates `rows` received rows of `call`'s payload (collective).
    pub(super) fn new(shmem: &'s Shmem, call: &MoeCall, rows: usize) -> Result<Self> {
        let h = call.hidden as usize;
        Ok(match call.scales {
            0 => Recv::Bf16(shmem.alloc_zeroed(rows * h)?),
            ns => Recv::Fp8(
                shmem.alloc_zeroed(rows * h)?,
                shmem.alloc_zeroed(rows * ns as usize)?,
            ),
        })
    }

    /// Bytes of symmetric memory they take.
    pub(super) fn bytes(&self) -> usize {
        match self {
            Recv::Bf16(x) => bytes(x),
            Recv::Fp8(x, scales) => bytes(x) + bytes(scales),
        }
    }

    /// The kernels' view: the rows as bytes, and the scales (null for bf16).
    pub(super) fn device(&mut self) -> (*mut u8, *mut f32) {
        match self {
            Recv::Bf16(x) => (x.as_mut_ptr().cast(), std::ptr::null_mut()),
            Recv::Fp8(x, scales) => (x.as_mut_ptr(), scales.as_mut_ptr()),
        }
    }

    /// The bf16 rows, or the error `call` gives for FP8 ones.
    pub(super) fn bf16(&self, call: &'static str) -> Result<&SymBuffer<'s, bf16>> {
        match self {
            Recv::Bf16(x) => Ok(x),
            Recv::Fp8(..) => Err(wrong_payload(call, MoePayload::Fp8E4m3)),
        }
    }

    /// The FP8 rows and scales, or the error `call` gives for bf16 ones.
    pub(super) fn fp8(
        &self,
        call: &'static str,
    ) -> Result<(&SymBuffer<'s, u8>, &SymBuffer<'s, f32>)> {
        match self {
            Recv::Fp8(x, scales) => Ok((x, scales)),
            Recv::Bf16(_) => Err(wrong_payload(call, MoePayload::Bf16)),
        }
    }
}

/// Bytes of `x` on each PE.
pub(super) fn bytes<T: bytemuck::Pod>(x: &SymBuffer<'_, T>) -> usize {
    x.len() * std::mem::size_of::<T>()
}

/// The error of `call`, made for the other payload than the buffers' `payload`.
pub(super) fn wrong_payload(call: &'static str, payload: MoePayload) -> Error {
    Error::InvalidArgument {
        call,
        message: format!("these buffers were made for {payload:?} rows (MoeConfig::payload)"),
    }
}

/// The buffers of one MoE layer's dispatches and combines (see [`crate::moe`] for what each
/// holds and why it is sized so). Made by [`crate::Ops::moe_buffers`] on every PE of the team.
pub struct MoeBuffers<'s> {
    pub(crate) config: MoeConfig,
    pub(crate) team: Team,
    /// The team's size.
    pub(crate) size: u32,
    /// The latest dispatch's epoch (0: none yet), and whether its combine ran.
    pub(crate) epoch: u64,
    pub(crate) combined: bool,
    flags: SymBuffer<'s, u64>,
    counts_in: SymBuffer<'s, u32>,
    staging: SymBuffer<'s, u8>,
    meta: SymBuffer<'s, u32>,
    combine_recv: SymBuffer<'s, f32>,
    send_slot: SymBuffer<'s, u32>,
    pos: SymBuffer<'s, u32>,
    counts_out: SymBuffer<'s, u32>,
    route_blocks: SymBuffer<'s, u32>,
    meta_out: SymBuffer<'s, u32>,
    combine_stage: SymBuffer<'s, f32>,
    pub(crate) layout: SymBuffer<'s, u32>,
    /// The received rows: bf16, or FP8 bytes with their scales.
    recv: Recv<'s>,
    recv_src: SymBuffer<'s, u32>,
    recv_w: SymBuffer<'s, f32>,
    /// `topk_idx` as the host checks it before a dispatch is queued.
    pub(crate) topk_check: SymBuffer<'s, i32>,
}

impl MoeConfig {
    /// Checks the shape for a team of `size` ranks; the message says what is wrong.
    pub(crate) fn check(&self, call: &'static str, size: usize) -> Result<()> {
        let bad = |message: String| Err(Error::InvalidArgument { call, message });
        let MoeConfig {
            experts,
            top_k,
            hidden,
            max_tokens,
            align,
            payload: _,
        } = *self;
        if size > MAX_RANKS {
            return bad(format!(
                "a team of {size} PEs: the MoE ops take at most {MAX_RANKS}"
            ));
        }
        if experts == 0 || experts as usize % size != 0 {
            return bad(format!(
                "{experts} experts over {size} PEs: the experts must be a positive multiple of \
                 the team's size (each PE holds experts / size)"
            ));
        }
        if !(1..=MAX_TOP_K).contains(&top_k) {
            return bad(format!(
                "top_k = {top_k}: 1 to {MAX_TOP_K} experts per token"
            ));
        }
        if hidden == 0 || max_tokens == 0 || align == 0 {
            return bad(format!(
                "hidden = {hidden}, max_tokens = {max_tokens}, align = {align}: each must be at \
                 least 1"
            ));
        }
        // Rows and entries are numbered in 32 bits on the device.
        let local = (experts as usize / size) as u64;
        let rows = size as u64 * max_tokens as u64 * (top_k as u64).min(local)
            + local * (align as u64 - 1);
        if rows > u32::MAX as u64
            || size as u64 * max_tokens as u64 * top_k as u64 > u32::MAX as u64
        {
            return bad(format!(
                "{size} PEs x {max_tokens} tokens x top-{top_k}: more rows than 32-bit indices \
                 count; dispatch fewer tokens per call"
            ));
        }
        Ok(())
    }

    /// The kernels' view of a call of this shape.
    pub(crate) fn call(&self, size: u32, tokens: u32, epoch: u64) -> MoeCall {
        let call = MoeCall::new(
            (self.experts, self.top_k, self.hidden),
            (self.max_tokens, self.align),
            size,
            epoch,
        )
        .with_tokens(tokens);
        match self.payload {
            MoePayload::Bf16 => call,
            MoePayload::Fp8E4m3 => call.with_fp8(),
        }
    }
}

impl<'s> MoeBuffers<'s> {
    /// Allocates the buffers (collective, like every symmetric allocation).
    pub(crate) fn new(shmem: &'s Shmem, team: Team, size: u32, config: MoeConfig) -> Result<Self> {
        let call = config.call(size, 0, 0);
        let (n, r, h) = (
            size as usize,
            config.max_tokens as usize,
            config.hidden as usize,
        );
        let (w, cw, k) = (
            call.record_words() as usize,
            call.count_words() as usize,
            config.top_k as usize,
        );
        let cap = call.capacity() as usize;
        let words = LayoutWords::new(size, call.local_experts()).words;
        Ok(Self {
            config,
            team,
            size,
            epoch: 0,
            combined: true,
            flags: shmem.alloc_zeroed(flag_words(size))?,
            counts_in: shmem.alloc_zeroed(n * cw)?,
            staging: shmem.alloc_zeroed(n * r * call.staged_bytes() as usize)?,
            meta: shmem.alloc_zeroed(n * r * w)?,
            combine_recv: shmem.alloc_zeroed(n * r * h)?,
            send_slot: shmem.alloc_zeroed(r * n)?,
            pos: shmem.alloc_zeroed(r * k)?,
            counts_out: shmem.alloc_zeroed(n * cw)?,
            route_blocks: shmem.alloc_zeroed(route::blocks_words(&call) as usize)?,
            meta_out: shmem.alloc_zeroed(r * n * w)?,
            combine_stage: shmem.alloc_zeroed(n * r * h)?,
            layout: shmem.alloc_zeroed(words)?,
            recv: Recv::new(shmem, &call, cap)?,
            recv_src: shmem.alloc_zeroed(cap * 2)?,
            recv_w: shmem.alloc_zeroed(cap)?,
            topk_check: shmem.alloc_zeroed(r * k)?,
        })
    }

    /// The shape the buffers were made for.
    pub fn config(&self) -> MoeConfig {
        self.config
    }

    /// The most rows a dispatch can leave on this PE, padding included: `recv_x` holds this
    /// many rows of `hidden`, and a combine's `expert_out` must hold the dispatch's rows.
    pub fn capacity(&self) -> usize {
        self.config.call(self.size, 0, 0).capacity() as usize
    }

    /// Bytes of symmetric memory the buffers take on each PE.
    pub fn bytes(&self) -> usize {
        bytes(&self.flags)
            + bytes(&self.counts_in)
            + bytes(&self.staging)
            + bytes(&self.meta)
            + bytes(&self.combine_recv)
            + bytes(&self.send_slot)
            + bytes(&self.pos)
            + bytes(&self.counts_out)
            + bytes(&self.route_blocks)
            + bytes(&self.meta_out)
            + bytes(&self.combine_stage)
            + bytes(&self.layout)
            + self.recv.bytes()
            + bytes(&self.recv_src)
            + bytes(&self.recv_w)
            + bytes(&self.topk_check)
    }

    /// The received bf16 rows (`capacity × hidden`; [`MoePayload::Bf16`]): after a dispatch,
    /// its [`MoeLayout`] says which are whose; padding rows are zero.
    pub fn recv_x(&self) -> Result<&SymBuffer<'s, bf16>> {
        self.recv.bf16("MoeBuffers::recv_x")
    }

    /// The received FP8 rows (`capacity × hidden` bytes, laid out as [`MoeBuffers::recv_x`]'s;
    /// [`MoePayload::Fp8E4m3`]) and their scales, `⌈hidden / 128⌉ × capacity` f32, M
    /// contiguous (row `r`'s scale of elements `128 kb ..` at `kb × capacity + r`): A's block
    /// scales of [`crate::Ops::grouped_gemm_fp8`] over all `capacity` rows, so the experts
    /// run on the rows as they are, with `GroupRows::Offsets { m: capacity, .. }` and the
    /// ends of [`MoeLayout::group_ends`] (docs/moe.md).
    pub fn recv_x_fp8(&self) -> Result<(&SymBuffer<'s, u8>, &SymBuffer<'s, f32>)> {
        self.recv.fp8("MoeBuffers::recv_x_fp8")
    }

    /// The error of a call for the other payload.
    pub(crate) fn wrong_payload(&self, call: &'static str) -> Error {
        wrong_payload(call, self.config.payload)
    }

    /// Each received row's source, `[rank, token]` per row (`u32::MAX` twice for padding).
    pub fn recv_src(&self) -> &SymBuffer<'s, u32> {
        &self.recv_src
    }

    /// Each received row's router weight (0 for padding).
    pub fn recv_weights(&self) -> &SymBuffer<'s, f32> {
        &self.recv_w
    }

    /// The kernels' view of the buffers.
    pub(crate) fn device(&mut self) -> MoeBufs {
        let (recv_x, recv_scales) = self.recv.device();
        MoeBufs {
            flags: self.flags.as_mut_ptr(),
            counts_in: self.counts_in.as_mut_ptr(),
            staging: self.staging.as_mut_ptr(),
            meta: self.meta.as_mut_ptr(),
            combine_recv: self.combine_recv.as_mut_ptr(),
            send_slot: self.send_slot.as_mut_ptr(),
            pos: self.pos.as_mut_ptr(),
            counts_out: self.counts_out.as_mut_ptr(),
            route_blocks: self.route_blocks.as_mut_ptr(),
            meta_out: self.meta_out.as_mut_ptr(),
            combine_stage: self.combine_stage.as_mut_ptr(),
            layout: self.layout.as_mut_ptr(),
            recv_x,
            recv_scales,
            recv_src: self.recv_src.as_mut_ptr(),
            recv_w: self.recv_w.as_mut_ptr(),
        }
    }
}
