//! The host calls: [`Ops::moe_buffers`], [`Ops::moe_dispatch`], [`Ops::moe_combine`] —
//! argument checks, then `rshmem_moe`'s steps queued in order (the table in
//! `rshmem_ops_kernels::moe`).

use super::buffers::{MoeBuffers, MoeConfig, MoeLayout, MoePayload};
use crate::Ops;
use rshmem_device::bf16;
use rshmem_host::{
    Error, IntoKernelArgs, Kernel, LaunchConfig, Module, Result, Stream, SymRange, SymRangeMut,
    Team,
};
use rshmem_moe::call::{LayoutWords, NONE};
use rshmem_moe::{barrier, route, MoeCall};
use rshmem_ops_kernels::moe::{self as k, Announce};

/// Refuses more tokens than the buffers hold.
pub(super) fn check_tokens(call: &'static str, tokens: u32, max_tokens: u32) -> Result<()> {
    if tokens > max_tokens {
        return Err(Error::InvalidArgument {
            call,
            message: format!("{tokens} tokens, more than the buffers' max_tokens = {max_tokens}"),
        });
    }
    Ok(())
}

/// Checks each `(what, len, need)`: `what` holds `len` elements, and `why` (the call's tokens,
/// its rows) needs `need`.
pub(super) fn check_lengths(
    call: &'static str,
    why: &str,
    items: &[(&str, usize, usize)],
) -> Result<()> {
    match items.iter().find(|(_, len, need)| len < need) {
        Some((what, len, need)) => Err(Error::InvalidArgument {
            call,
            message: format!("`{what}` holds {len} elements, but {why} need {need}"),
        }),
        None => Ok(()),
    }
}

/// A dispatch's rows (either mode's): elements (as bytes) and scales, with the ranges'
/// lengths (in their elements: bf16 or bytes, f32).
pub(super) struct Rows {
    /// What the rows are: a call must match its buffers'.
    pub(super) payload: MoePayload,
    pub(super) x: *const u8,
    x_len: usize,
    pub(super) scales: *const f32,
    scales_len: usize,
}

impl Rows {
    /// bf16 rows.
    pub(super) fn bf16(x: SymRange<'_, bf16>) -> Self {
        Self {
            payload: MoePayload::Bf16,
            x: x.as_ptr().cast(),
            x_len: x.len(),
            scales: std::ptr::null(),
            scales_len: 0,
        }
    }

    /// FP8 rows: e4m3 bytes and their scales.
    pub(super) fn fp8(x: SymRange<'_, u8>, scales: SymRange<'_, f32>) -> Self {
        Self {
            payload: MoePayload::Fp8E4m3,
            x: x.as_ptr(),
            x_len: x.len(),
            scales: scales.as_ptr(),
            scales_len: scales.len(),
        }
    }

    /// [`check_lengths`]' items for `call`'s rows (its tokens, its payload).
    pub(super) fn lengths(&self, call: &MoeCall) -> [(&'static str, usize, usize); 2] {
        let (t, h) = (call.tokens as usize, call.hidden as usize);
        [
            ("x", self.x_len, t * h),
            ("x_scales", self.scales_len, t * call.scales as usize),
        ]
    }
}

/// Threads of the grid-wide steps' blocks (at least `MAX_RANKS`: the steps whose threads
/// wait one per rank run on these blocks too).
pub(super) const THREADS: u32 = 256;
// `moe_send`'s launch bounds (256 threads, two blocks per SM) take these blocks.
const _: () = assert!(THREADS <= 256);

/// Queues `call`'s routing on `stream` (`rshmem_moe::route`): `Count`, the counts per block,
/// where the grid ([`route::blocks`]) has more than one block, then `Number`, the numbering,
/// on the same grid.
///
/// # Safety
///
/// `args` meet both kernels' contracts (`route::count`, `route::route`).
pub(super) unsafe fn queue_route<Count: Kernel, Number: Kernel, A>(
    module: &Module<'_>,
    stream: &Stream<'_>,
    call: &MoeCall,
    args: A,
) -> Result<()>
where
    A: Copy + IntoKernelArgs<Count::Args> + IntoKernelArgs<Number::Args>,
{
    let blocks = route::blocks(call.tokens, call.top_k);
    let config = LaunchConfig::new(blocks, route::THREADS).shared_mem(route::shared_bytes(call));
    // SAFETY: the caller's; the launch is the one both kernels take.
    unsafe {
        if blocks > 1 {
            module.launch_on::<Count>(stream, config, args)?;
        }
        module.launch_on::<Number>(stream, config, args)
    }
}

impl<'s> Ops<'s> {
    /// The buffers of an MoE layer of shape `config` over `team` (every member calls it, with
    /// the same `config`: the allocations are symmetric). See [`crate::moe`] for what they
    /// hold; [`MoeBuffers::bytes`] says how much.
    pub fn moe_buffers(&self, team: Team, config: MoeConfig) -> Result<MoeBuffers<'s>> {
        const CALL: &str = "Ops::moe_buffers";
        let size = self.moe_team_size(CALL, team)?;
        config.check(CALL, size as usize)?;
        self.moe_module(CALL)?;
        MoeBuffers::new(self.shmem, team, size, config)
    }

    /// Sends each of this PE's `tokens` tokens (`x`: `tokens × hidden` bf16; `topk_idx`,
    /// `topk_weights`: `tokens × top_k`) to the ranks of its experts, and waits until this
    /// PE's received rows are laid out in `bufs` ([`crate::moe`]: the layout, the rules).
    /// Collective over the buffers' team; returns this PE's [`MoeLayout`]. The buffers are
    /// of [`MoePayload::Bf16`].
    pub fn moe_dispatch<'a>(
        &self,
        stream: &Stream<'_>,
        bufs: &mut MoeBuffers<'s>,
        x: impl Into<SymRange<'a, bf16>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        topk_weights: impl Into<SymRange<'a, f32>>,
        tokens: u32,
    ) -> Result<MoeLayout> {
        const CALL: &str = "Ops::moe_dispatch";
        let rows = Rows::bf16(x.into());
        self.dispatch(
            CALL,
            stream,
            bufs,
            rows,
            topk_idx.into(),
            topk_weights.into(),
            tokens,
        )
    }

    /// [`Ops::moe_dispatch`] of FP8 rows ([`MoePayload::Fp8E4m3`]): `x` holds `tokens ×
    /// hidden` e4m3 bytes and `x_scales` `tokens × ⌈hidden / 128⌉` f32 scales; the rows arrive
    /// as sent, the scales in the FP8 grouped GEMM's layout ([`MoeBuffers::recv_x_fp8`]).
    #[allow(clippy::too_many_arguments)]
    pub fn moe_dispatch_fp8<'a>(
        &self,
        stream: &Stream<'_>,
        bufs: &mut MoeBuffers<'s>,
        x: impl Into<SymRange<'a, u8>>,
        x_scales: impl Into<SymRange<'a, f32>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        topk_weights: impl Into<SymRange<'a, f32>>,
        tokens: u32,
    ) -> Result<MoeLayout> {
        const CALL: &str = "Ops::moe_dispatch_fp8";
        let rows = Rows::fp8(x.into(), x_scales.into());
        self.dispatch(
            CALL,
            stream,
            bufs,
            rows,
            topk_idx.into(),
            topk_weights.into(),
            tokens,
        )
    }

    /// Both dispatches: the checks, the steps, the layout.
    #[allow(clippy::too_many_arguments)]
    fn dispatch(
        &self,
        name: &'static str,
        stream: &Stream<'_>,
        bufs: &mut MoeBuffers<'s>,
        rows: Rows,
        topk: SymRange<'_, i32>,
        weights: SymRange<'_, f32>,
        tokens: u32,
    ) -> Result<MoeLayout> {
        let cfg = bufs.config;
        if cfg.payload != rows.payload {
            return Err(bufs.wrong_payload(name));
        }
        let bad = |message: String| Error::InvalidArgument {
            call: name,
            message,
        };
        if stream.is_capturing() {
            return Err(bad(
                "the normal-mode dispatch waits for its layout on the host, which a \
                            graph capture cannot record; call it outside the capture"
                    .into(),
            ));
        }
        check_tokens(name, tokens, cfg.max_tokens)?;
        let (t, kk) = (tokens as usize, cfg.top_k as usize);
        let [x_len, scales_len] = rows.lengths(&cfg.call(bufs.size, tokens, 0));
        check_lengths(
            name,
            &format!("{tokens} tokens"),
            &[
                x_len,
                scales_len,
                ("topk_idx", topk.len(), t * kk),
                ("topk_weights", weights.len(), t * kk),
            ],
        )?;
        if !bufs.combined {
            return Err(bad(format!(
                "dispatch {} of these buffers has not been combined yet: each dispatch is \
                 followed by its combine (its rows stay in the buffers until then)",
                bufs.epoch
            )));
        }
        let module = self.moe_module(name)?;
        // The experts are checked here, before anything is queued: a PE that stops here ends
        // the job with this error instead of leaving the others waiting for its tokens.
        if tokens > 0 {
            let me = self.shmem.my_pe();
            stream.get(bufs.topk_check.range(..t * kk)?, topk.range(..t * kk)?, me)?;
            let entries = bufs.topk_check.to_vec()?;
            if let Some(i) = entries[..t * kk]
                .iter()
                .position(|&e| e < -1 || e >= cfg.experts as i32)
            {
                return Err(bad(format!(
                    "topk_idx[{}][{}] = {} is not an expert (0..{}) nor -1 (no expert)",
                    i / kk,
                    i % kk,
                    entries[i],
                    cfg.experts
                )));
            }
        }
        let epoch = bufs.epoch + 1;
        let call = cfg.call(bufs.size, tokens, epoch);
        let (team, dev) = (bufs.team, bufs.device());
        let (one, wide) = self.moe_grids(bufs.size);
        // SAFETY: every kernel's contract (rshmem_moe): the buffers are this PE's of the
        // call's shape (every member's at the same addresses: one collective allocation);
        // `x`, `topk`, `weights` hold `tokens` rows (checked above) in symmetric memory; the
        // steps are queued in order on one stream, after the previous combine (checked);
        // every member runs the same call (the rules).
        unsafe {
            module.launch_on::<k::moe_barrier>(stream, one, (team, dev, call))?;
            queue_route::<k::moe_route_count, k::moe_route, _>(
                module,
                stream,
                &call,
                (dev, topk.as_ptr(), call),
            )?;
            module.launch_on::<k::moe_send>(
                stream,
                wide(tokens),
                (
                    team,
                    dev,
                    rows.x,
                    rows.scales,
                    topk.as_ptr(),
                    weights.as_ptr(),
                    call,
                ),
            )?;
            module.launch_on::<k::moe_signal>(
                stream,
                one,
                (team, dev, Announce::Data as u32, call),
            )?;
            module.launch_on::<k::moe_layout>(stream, one, (team, dev, call))?;
            module.launch_on::<k::moe_scatter>(
                stream,
                wide(cfg.max_tokens * bufs.size),
                (dev, call),
            )?;
        }
        bufs.epoch = epoch;
        bufs.combined = false;
        stream.synchronize()?;
        let words = LayoutWords::new(bufs.size, call.local_experts());
        let lay = bufs.layout.to_vec()?;
        let local = call.local_experts() as usize;
        let bad_entry = lay[words.bad_entry];
        if bad_entry != NONE {
            // Checked before the call: the entries changed while it was queued.
            let (bt, bk) = (bad_entry / cfg.top_k, bad_entry % cfg.top_k);
            return Err(bad(format!(
                "topk_idx[{bt}][{bk}] was not an expert (0..{}) nor -1 when the dispatch ran \
                 (it was when the call checked it: something wrote topk_idx meanwhile); the \
                 entry was skipped",
                cfg.experts
            )));
        }
        Ok(MoeLayout {
            epoch,
            tokens,
            tokens_received: lay[words.totals],
            expert_offsets: lay[words.expert_base..words.expert_base + local].to_vec(),
            expert_rows: lay[words.expert_rows..words.expert_rows + local].to_vec(),
            rows: lay[words.totals + 1],
        })
    }

    /// Sends each row of `expert_out` (the experts' output for `layout`'s rows, row for row
    /// as [`MoeBuffers::recv_x`]) back, weighted, and sums this PE's tokens into `out`
    /// (`tokens × hidden` bf16: [`crate::moe`] says in which order). Collective over the
    /// buffers' team; queued on `stream`, returns at once.
    pub fn moe_combine<'a>(
        &self,
        stream: &Stream<'_>,
        bufs: &mut MoeBuffers<'s>,
        layout: &MoeLayout,
        expert_out: impl Into<SymRange<'a, bf16>>,
        out: impl Into<SymRangeMut<'a, bf16>>,
    ) -> Result<()> {
        const CALL: &str = "Ops::moe_combine";
        let (expert_out, mut out) = (expert_out.into(), out.into());
        let cfg = bufs.config;
        let bad = |message: String| Error::InvalidArgument {
            call: CALL,
            message,
        };
        if layout.epoch != bufs.epoch || bufs.combined {
            return Err(bad(format!(
                "the layout is of dispatch {} of these buffers, but the one to combine is {}{}",
                layout.epoch,
                bufs.epoch,
                if bufs.combined {
                    ", which was combined already"
                } else {
                    ""
                }
            )));
        }
        let h = cfg.hidden as usize;
        let rows = [("expert_out", expert_out.len(), layout.rows as usize * h)];
        check_lengths(CALL, "the dispatch's rows", &rows)?;
        let tokens = [("out", out.len(), layout.tokens as usize * h)];
        check_lengths(CALL, "this PE's tokens", &tokens)?;
        let module = self.moe_module(CALL)?;
        let call = cfg.call(bufs.size, layout.tokens, layout.epoch);
        let (team, dev) = (bufs.team, bufs.device());
        let (one, wide) = self.moe_grids(bufs.size);
        // SAFETY: as for the dispatch; `expert_out` holds the dispatch's rows and `out` this
        // PE's tokens (checked); the dispatch of this epoch ran last on these buffers.
        unsafe {
            module.launch_on::<k::moe_combine_send>(
                stream,
                wide(layout.tokens_received),
                (team, dev, expert_out.as_ptr(), call),
            )?;
            module.launch_on::<k::moe_signal>(
                stream,
                one,
                (team, dev, Announce::Combine as u32, call),
            )?;
            module.launch_on::<k::moe_combine_reduce>(
                stream,
                wide(layout.tokens),
                (team, dev, out.as_mut_ptr(), call),
            )?;
        }
        bufs.combined = true;
        Ok(())
    }

    /// The steps' launches: one block of a thread per rank, and a grid for `items` rows of
    /// work (blocks walk them with a stride, so a few per SM suffice).
    pub(super) fn moe_grids(&self, size: u32) -> (LaunchConfig, impl Fn(u32) -> LaunchConfig) {
        let most = 4 * self.info.multiprocessors.max(1);
        (
            LaunchConfig::new(1, barrier::threads(size)),
            move |items: u32| LaunchConfig::new(items.clamp(1, most), THREADS),
        )
    }

    /// The team's size, where this PE is a member.
    pub(super) fn moe_team_size(&self, call: &'static str, team: Team) -> Result<u32> {
        match (self.shmem.team_n_pes(team), self.shmem.team_my_pe(team)) {
            (Some(size), Some(_)) => Ok(size as u32),
            _ => Err(Error::InvalidArgument {
                call,
                message: format!(
                    "team {team:?}: this PE (world PE {}) is not a member of it, or does not \
                     hold it (a split team is used through the handle its own split returned)",
                    self.shmem.my_pe()
                ),
            }),
        }
    }

    /// The MoE image.
    pub(super) fn moe_module(&self, call: &'static str) -> Result<&Module<'s>> {
        self.moe.as_ref().ok_or_else(|| Error::InvalidArgument {
            call,
            message: format!(
                "the MoE kernels need an sm_80 or newer GPU; this PE's is sm_{}",
                self.info.sm
            ),
        })
    }
}
