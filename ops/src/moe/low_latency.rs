//! The low-latency mode's host side: [`MoeLlBuffers`], [`Ops::moe_ll_buffers`],
//! [`Ops::moe_ll_dispatch`] (or its halves [`Ops::moe_ll_dispatch_send`] and
//! [`Ops::moe_ll_dispatch_recv`]; `_fp8` for FP8 rows) and [`Ops::moe_ll_combine`] — kernels
//! only, nothing waits on the host, so a dispatch and its combine record into a graph
//! (`rshmem_moe::low_latency` has the steps and why no barrier is needed).

use super::buffers::{bytes, wrong_payload, MoeConfig, Recv};
use super::calls::{check_lengths, check_tokens, queue_route, Rows, THREADS};
use crate::Ops;
use rshmem_device::bf16;
use rshmem_host::{
    Error, LaunchConfig, Result, Shmem, Stream, SymBuffer, SymRange, SymRangeMut, Team,
};
use rshmem_moe::low_latency::LlBufs;
use rshmem_moe::{route, MoeCall};
use rshmem_ops_kernels::moe as k;

/// Where the dispatch/combine pair of a low-latency buffer set is, as queued (or recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// Ready for a dispatch.
    Idle,
    /// Sends queued, `tokens` of them; the receive is next.
    Sent { tokens: u32 },
    /// Received; the combine is next.
    Received { tokens: u32 },
}

/// The buffers of one MoE layer's low-latency dispatches and combines (decode: a few hundred
/// tokens per PE at most): fixed receive rows, `size × max_tokens` per local expert, with a
/// count per expert on the device. Made by [`Ops::moe_ll_buffers`] on every PE of the team.
///
/// The received rows are the grouped GEMM's masked layout as they are: `m = local ×
/// rows_per_expert` rows, group `j` its first `recv_count[j]` rows at `j × rows_per_expert`.
/// bf16 rows ([`MoePayload::Bf16`]) go to [`Ops::grouped_gemm`] (`A = recv_x()`); FP8 ones
/// ([`MoePayload::Fp8E4m3`]) to [`Ops::grouped_gemm_fp8`] with block scales (`A =
/// recv_x_fp8().0` as e4m3, A's scales `recv_x_fp8().1`: `⌈hidden / 128⌉ × m`, M contiguous,
/// the layout that GEMM takes for A).
pub struct MoeLlBuffers<'s> {
    config: MoeConfig,
    team: Team,
    size: u32,
    step: Step,
    shared: LlShared<'s>,
    recv: Recv<'s>,
    staging: SymBuffer<'s, u8>,
    meta: SymBuffer<'s, u32>,
    index: SymBuffer<'s, u32>,
}

/// The buffers the low-latency mode shares with the fused layer (`super::layer`, whose rows
/// skip the staging): the flags and call counter, the routing's words, the sources and counts
/// of the fixed receive rows per local expert, and the combine's rows. The received rows
/// themselves are each owner's (of its payload).
pub(super) struct LlShared<'s> {
    flags: SymBuffer<'s, u64>,
    counter: SymBuffer<'s, u64>,
    pos: SymBuffer<'s, u32>,
    send_slot: SymBuffer<'s, u32>,
    counts_out: SymBuffer<'s, u32>,
    bad_entry: SymBuffer<'s, u32>,
    route_blocks: SymBuffer<'s, u32>,
    pub(super) recv_src: SymBuffer<'s, u32>,
    pub(super) recv_count: SymBuffer<'s, u32>,
    pub(super) combine_recv: SymBuffer<'s, bf16>,
}

impl<'s> LlShared<'s> {
    /// Allocates them (collective) for `call`'s shape over `n` ranks (`n × max_tokens` rows
    /// per local expert).
    pub(super) fn new(shmem: &'s Shmem, call: &MoeCall) -> Result<Self> {
        let (n, r, h, kk) = (
            call.size as usize,
            call.max_tokens as usize,
            call.hidden as usize,
            call.top_k as usize,
        );
        let local = call.local_experts() as usize;
        Ok(Self {
            flags: shmem.alloc_zeroed(local * n + n)?,
            counter: shmem.alloc_zeroed(1)?,
            pos: shmem.alloc_zeroed(r * kk)?,
            send_slot: shmem.alloc_zeroed(r * n)?,
            counts_out: shmem.alloc_zeroed(n * call.count_words() as usize)?,
            bad_entry: shmem.alloc_zeroed(1)?,
            route_blocks: shmem.alloc_zeroed(route::blocks_words(call) as usize)?,
            recv_src: shmem.alloc_zeroed(local * n * r * 2)?,
            recv_count: shmem.alloc_zeroed(local)?,
            combine_recv: shmem.alloc_zeroed(r * kk * h)?,
        })
    }

    /// The first skipped `topk_idx` entry of the latest call, as `(token, entry)` (waits for
    /// the PE's work).
    pub(super) fn skipped_entry(&self, top_k: u32) -> Result<Option<(u32, u32)>> {
        let bad = self.bad_entry.to_vec()?[0];
        Ok((bad != u32::MAX).then_some((bad / top_k, bad % top_k)))
    }

    /// Bytes of symmetric memory they take on each PE.
    pub(super) fn bytes(&self) -> usize {
        bytes(&self.flags)
            + bytes(&self.counter)
            + bytes(&self.pos)
            + bytes(&self.send_slot)
            + bytes(&self.counts_out)
            + bytes(&self.bad_entry)
            + bytes(&self.route_blocks)
            + bytes(&self.recv_src)
            + bytes(&self.recv_count)
            + bytes(&self.combine_recv)
    }

    /// The kernels' view, with the staging buffers (null where there are none) and the
    /// received rows and scales (null for bf16).
    pub(super) fn device(
        &mut self,
        (staging, meta, index): (*mut u8, *mut u32, *mut u32),
        (recv_x, recv_scales): (*mut u8, *mut f32),
    ) -> LlBufs {
        LlBufs {
            flags: self.flags.as_mut_ptr(),
            counter: self.counter.as_mut_ptr(),
            staging,
            meta,
            index,
            pos: self.pos.as_mut_ptr(),
            send_slot: self.send_slot.as_mut_ptr(),
            counts_out: self.counts_out.as_mut_ptr(),
            bad_entry: self.bad_entry.as_mut_ptr(),
            route_blocks: self.route_blocks.as_mut_ptr(),
            recv_x,
            recv_scales,
            recv_src: self.recv_src.as_mut_ptr(),
            recv_count: self.recv_count.as_mut_ptr(),
            combine_recv: self.combine_recv.as_mut_ptr(),
        }
    }
}

impl<'s> MoeLlBuffers<'s> {
    /// The shape the buffers were made for.
    pub fn config(&self) -> MoeConfig {
        self.config
    }

    /// Rows each local expert owns in [`MoeLlBuffers::recv_x`]: `size × max_tokens`.
    pub fn rows_per_expert(&self) -> usize {
        (self.size * self.config.max_tokens) as usize
    }

    /// The received bf16 rows ([`MoePayload::Bf16`]; `local × rows_per_expert × hidden`):
    /// local expert `j`'s are rows `j × rows_per_expert ..`, the first `recv_count[j]` of
    /// them valid (by source rank, then the source's token order).
    pub fn recv_x(&self) -> Result<&SymBuffer<'s, bf16>> {
        self.recv.bf16("MoeLlBuffers::recv_x")
    }

    /// The received FP8 rows ([`MoePayload::Fp8E4m3`]): e4m3 bytes laid out as
    /// [`MoeLlBuffers::recv_x`]'s rows (`local × rows_per_expert × hidden`), and their scales
    /// as [`Ops::grouped_gemm_fp8`] takes A's block scales: `⌈hidden / 128⌉ × m` f32, `m =
    /// local × rows_per_expert`, M contiguous (row `r`'s scale of elements `128 kb ..` at `kb
    /// × m + r`). Pass the bytes as e4m3 with `range(..)?.cast::<E4m3>()?`.
    pub fn recv_x_fp8(&self) -> Result<(&SymBuffer<'s, u8>, &SymBuffer<'s, f32>)> {
        self.recv.fp8("MoeLlBuffers::recv_x_fp8")
    }

    /// Each received row's source: `[rank, entry]`, the entry `t × top_k + kk` of that
    /// rank's dispatch.
    pub fn recv_src(&self) -> &SymBuffer<'s, u32> {
        &self.shared.recv_src
    }

    /// Each local expert's received rows (on the device: read it with `to_vec`, or hand it
    /// to a grouped GEMM of the masked layout).
    pub fn recv_count(&self) -> &SymBuffer<'s, u32> {
        &self.shared.recv_count
    }

    /// The first `topk_idx` entry of the latest dispatch that was neither an expert nor `-1`
    /// (skipped), as `(token, entry)`; waits for the PE's work (the low-latency calls do not
    /// check entries on the host).
    pub fn skipped_entry(&self) -> Result<Option<(u32, u32)>> {
        self.shared.skipped_entry(self.config.top_k)
    }

    /// Bytes of symmetric memory the buffers take on each PE.
    pub fn bytes(&self) -> usize {
        self.shared.bytes()
            + self.recv.bytes()
            + bytes(&self.staging)
            + bytes(&self.meta)
            + bytes(&self.index)
    }

    fn device(&mut self) -> LlBufs {
        let staging = (
            self.staging.as_mut_ptr(),
            self.meta.as_mut_ptr(),
            self.index.as_mut_ptr(),
        );
        self.shared.device(staging, self.recv.device())
    }

    /// The error of a call queued out of the dispatch → receive → combine order.
    fn out_of_order(&self, call: &'static str, wants: &str) -> Error {
        Error::InvalidArgument {
            call,
            message: format!(
                "{call} wants {wants}, but these buffers are at {:?}: each dispatch is sent, \
                 received and combined, in that order, before the next (its rows stay in the \
                 buffers until then)",
                self.step
            ),
        }
    }
}

impl<'s> Ops<'s> {
    /// The low-latency buffers of an MoE layer of shape `config` (bf16 or FP8 rows, as
    /// `config.payload` says) over `team`: every member calls it with the same `config` (the
    /// allocations are symmetric).
    pub fn moe_ll_buffers(&self, team: Team, config: MoeConfig) -> Result<MoeLlBuffers<'s>> {
        const CALL: &str = "Ops::moe_ll_buffers";
        let size = self.moe_team_size(CALL, team)?;
        config.check(CALL, size as usize)?;
        self.moe_module(CALL)?;
        let call = config.call(size, 0, 0);
        let (n, r, kk) = (
            size as usize,
            config.max_tokens as usize,
            config.top_k as usize,
        );
        let rows = call.local_experts() as usize * n * r;
        // index[i] = i: the puts' source of the entry indices.
        let index = self
            .shmem
            .alloc_from(&(0..(r * kk) as u32).collect::<Vec<_>>())?;
        Ok(MoeLlBuffers {
            config,
            team,
            size,
            step: Step::Idle,
            shared: LlShared::new(self.shmem, &call)?,
            recv: Recv::new(self.shmem, &call, rows)?,
            staging: self
                .shmem
                .alloc_zeroed(rows * call.staged_bytes() as usize)?,
            meta: self.shmem.alloc_zeroed(rows)?,
            index,
        })
    }

    /// Both halves of a low-latency dispatch of bf16 rows: [`Ops::moe_ll_dispatch_send`],
    /// then [`Ops::moe_ll_dispatch_recv`], on `stream`.
    pub fn moe_ll_dispatch<'a>(
        &self,
        stream: &Stream<'_>,
        ll: &mut MoeLlBuffers<'s>,
        x: impl Into<SymRange<'a, bf16>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        tokens: u32,
    ) -> Result<()> {
        self.moe_ll_dispatch_send(stream, ll, x, topk_idx, tokens)?;
        self.moe_ll_dispatch_recv(stream, ll)
    }

    /// Both halves of a low-latency dispatch of FP8 rows: [`Ops::moe_ll_dispatch_send_fp8`],
    /// then [`Ops::moe_ll_dispatch_recv`], on `stream`.
    pub fn moe_ll_dispatch_fp8<'a>(
        &self,
        stream: &Stream<'_>,
        ll: &mut MoeLlBuffers<'s>,
        x: impl Into<SymRange<'a, u8>>,
        x_scales: impl Into<SymRange<'a, f32>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        tokens: u32,
    ) -> Result<()> {
        self.moe_ll_dispatch_send_fp8(stream, ll, x, x_scales, topk_idx, tokens)?;
        self.moe_ll_dispatch_recv(stream, ll)
    }

    /// Queues the sends of a low-latency dispatch of this PE's `tokens` tokens (`x`: `tokens
    /// × hidden` bf16, `topk_idx`: `tokens × top_k` i32, `-1` for none): each valid entry's row
    /// to its expert's rank, with its count. Returns once queued; other work may be queued
    /// before [`Ops::moe_ll_dispatch_recv`], which waits for the rows, to overlap the
    /// transfer. Entries outside `-1 .. experts` are skipped ([`MoeLlBuffers::skipped_entry`]
    /// says which): nothing here waits on the host. Collective over the buffers' team; the
    /// buffers are of [`MoePayload::Bf16`].
    pub fn moe_ll_dispatch_send<'a>(
        &self,
        stream: &Stream<'_>,
        ll: &mut MoeLlBuffers<'s>,
        x: impl Into<SymRange<'a, bf16>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        tokens: u32,
    ) -> Result<()> {
        const CALL: &str = "Ops::moe_ll_dispatch_send";
        let rows = Rows::bf16(x.into());
        self.ll_send(CALL, stream, ll, rows, topk_idx.into(), tokens)
    }

    /// [`Ops::moe_ll_dispatch_send`] of FP8 rows ([`MoePayload::Fp8E4m3`]): `x` holds `tokens
    /// × hidden` e4m3 bytes and `x_scales` `tokens × ⌈hidden / 128⌉` f32 scales (per token,
    /// per 128 elements: `rshmem_ops::fp8::quantize(.., Blocks::PER_TOKEN)`); the bytes
    /// arrive as sent, the scales in the FP8 grouped GEMM's layout
    /// ([`MoeLlBuffers::recv_x_fp8`]).
    pub fn moe_ll_dispatch_send_fp8<'a>(
        &self,
        stream: &Stream<'_>,
        ll: &mut MoeLlBuffers<'s>,
        x: impl Into<SymRange<'a, u8>>,
        x_scales: impl Into<SymRange<'a, f32>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        tokens: u32,
    ) -> Result<()> {
        const CALL: &str = "Ops::moe_ll_dispatch_send_fp8";
        let rows = Rows::fp8(x.into(), x_scales.into());
        self.ll_send(CALL, stream, ll, rows, topk_idx.into(), tokens)
    }

    /// Both sends: the checks, then the steps.
    fn ll_send(
        &self,
        name: &'static str,
        stream: &Stream<'_>,
        ll: &mut MoeLlBuffers<'s>,
        rows: Rows,
        topk: SymRange<'_, i32>,
        tokens: u32,
    ) -> Result<()> {
        let cfg = ll.config;
        if cfg.payload != rows.payload {
            return Err(wrong_payload(name, cfg.payload));
        }
        if ll.step != Step::Idle {
            return Err(ll.out_of_order(name, "the previous dispatch combined"));
        }
        check_tokens(name, tokens, cfg.max_tokens)?;
        let call = cfg.call(ll.size, tokens, 0);
        let [x_len, scales_len] = rows.lengths(&call);
        let topk_len = ("topk_idx", topk.len(), (tokens * cfg.top_k) as usize);
        check_lengths(
            name,
            &format!("{tokens} tokens"),
            &[x_len, scales_len, topk_len],
        )?;
        let module = self.moe_module(name)?;
        let (team, dev) = (ll.team, ll.device());
        let (_, wide) = self.moe_grids(ll.size);
        // SAFETY: every kernel's contract (rshmem_moe::low_latency): the buffers are this
        // PE's of the call's shape and payload (one collective allocation: the same addresses
        // on every member); `x`, its scales and `topk` hold `tokens` rows (checked) in
        // symmetric memory; the steps are queued in order, after the previous combine
        // (checked); every member runs the same call (the rules).
        unsafe {
            module.launch_on::<k::moe_ll_begin>(stream, LaunchConfig::new(1, 32), (dev,))?;
            queue_route::<k::moe_ll_route_count, k::moe_ll_route, _>(
                module,
                stream,
                &call,
                (dev, topk.as_ptr(), call),
            )?;
            module.launch_on::<k::moe_ll_send>(
                stream,
                wide(tokens),
                (team, dev, rows.x, rows.scales, topk.as_ptr(), call),
            )?;
            let pairs = ll.size * call.local_experts();
            module.launch_on::<k::moe_ll_signal_counts>(
                stream,
                LaunchConfig::new(pairs.div_ceil(THREADS).max(1), THREADS),
                (team, dev, call),
            )?;
        }
        ll.step = Step::Sent { tokens };
        Ok(())
    }

    /// Queues the receive of the dispatch [`Ops::moe_ll_dispatch_send`] queued: per local
    /// expert, waits for every rank's rows, then packs them into its rows of
    /// [`MoeLlBuffers::recv_x`] and sets its count.
    pub fn moe_ll_dispatch_recv(
        &self,
        stream: &Stream<'_>,
        ll: &mut MoeLlBuffers<'s>,
    ) -> Result<()> {
        const CALL: &str = "Ops::moe_ll_dispatch_recv";
        let Step::Sent { tokens } = ll.step else {
            return Err(ll.out_of_order(CALL, "a dispatch sent"));
        };
        let module = self.moe_module(CALL)?;
        let call = ll.config.call(ll.size, tokens, 0);
        let (team, dev) = (ll.team, ll.device());
        let (_, wide) = self.moe_grids(ll.size);
        // At least a block per SM: a few experts' rows are split among them (the step's
        // docs); not more, as every block spins on flags while its ranks' sends run.
        let blocks = call.local_experts().max(self.info.multiprocessors);
        // SAFETY: as for the sends, which this PE queued last on these buffers; the blocks
        // have THREADS >= size threads (at most MAX_RANKS ranks).
        unsafe { module.launch_on::<k::moe_ll_recv>(stream, wide(blocks), (team, dev, call))? };
        ll.step = Step::Received { tokens };
        Ok(())
    }

    /// Queues the combine of the latest received dispatch: `expert_out` holds the experts'
    /// output row for row as [`MoeLlBuffers::recv_x`] (`local × rows_per_expert × hidden`);
    /// each of this PE's tokens gets `Σ topk_weights × row` over its valid entries, in entry
    /// order, in f32, rounded once to bf16, into `out` (`tokens × hidden`). `topk_idx` and
    /// `topk_weights` are the dispatch's (`tokens × top_k`).
    pub fn moe_ll_combine<'a>(
        &self,
        stream: &Stream<'_>,
        ll: &mut MoeLlBuffers<'s>,
        expert_out: impl Into<SymRange<'a, bf16>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        topk_weights: impl Into<SymRange<'a, f32>>,
        out: impl Into<SymRangeMut<'a, bf16>>,
    ) -> Result<()> {
        const CALL: &str = "Ops::moe_ll_combine";
        let (expert_out, topk, weights, mut out) = (
            expert_out.into(),
            topk_idx.into(),
            topk_weights.into(),
            out.into(),
        );
        let Step::Received { tokens } = ll.step else {
            return Err(ll.out_of_order(CALL, "a dispatch received"));
        };
        let cfg = ll.config;
        let (t, h, kk) = (tokens as usize, cfg.hidden as usize, cfg.top_k as usize);
        let rows = cfg.call(ll.size, 0, 0).local_experts() as usize * ll.rows_per_expert();
        let items = [
            ("expert_out", expert_out.len(), rows * h),
            ("topk_idx", topk.len(), t * kk),
            ("topk_weights", weights.len(), t * kk),
            ("out", out.len(), t * h),
        ];
        check_lengths(CALL, &format!("the dispatch's {tokens} tokens"), &items)?;
        let module = self.moe_module(CALL)?;
        let call = cfg.call(ll.size, tokens, 0);
        let (team, dev) = (ll.team, ll.device());
        let (one, wide) = self.moe_grids(ll.size);
        // SAFETY: as for the dispatch, whose receive this PE queued last on these buffers;
        // `expert_out`, `topk`, `weights` and `out` hold what the kernels read and write.
        unsafe {
            module.launch_on::<k::moe_ll_combine_send>(
                stream,
                wide(rows as u32),
                (team, dev, expert_out.as_ptr(), call),
            )?;
            module.launch_on::<k::moe_ll_signal_combine>(stream, one, (team, dev, call))?;
            module.launch_on::<k::moe_ll_combine_reduce>(
                stream,
                wide(tokens),
                (
                    team,
                    dev,
                    topk.as_ptr(),
                    weights.as_ptr(),
                    out.as_mut_ptr(),
                    call,
                ),
            )?;
        }
        ll.step = Step::Idle;
        Ok(())
    }
}
