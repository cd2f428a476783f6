//! The fused MoE layer's host side: [`MoeLayerConfig`], [`MoeLayerBuffers`]
//! ([`Ops::moe_layer_buffers`]), [`MoeLayerWeights`] ([`Ops::moe_layer_weights`]) and
//! [`Ops::moe_layer`], which queues `dispatch → gate/up GEMM + SwiGLU → down GEMM → combine`
//! as kernels only (`rshmem_moe::layer` has the steps, the waits and why each is there).

use super::buffers::{bytes, MoeConfig, MoePayload};
use super::calls::{check_lengths, check_tokens, queue_route};
use super::low_latency::LlShared;
use crate::gemm::grouped::tiles_bound;
use crate::gemm::launch::{encode_sm90, Boxes};
use crate::{BLayout, GemmShape, Ops};
use rshmem_device::bf16;
use rshmem_gemm::{sm90, GroupRows, Problem, Sm90Maps};
use rshmem_host::{
    Error, LaunchConfig, Module, Result, Shmem, Stream, SymBuffer, SymRange, SymRangeMut, Team,
    TensorMap,
};
use rshmem_moe::layer::{rows_per_expert, LayerBufs, Ranks, SEND_ROWS};
use rshmem_moe::MoeCall;
use rshmem_ops_kernels::moe as k;
use rshmem_ops_kernels::moe90::{self, GateUp90, Waits};

/// The shape of a fused MoE layer, the same on every PE: `experts` experts over the team, each
/// a gated MLP `down(silu(gate(x)) × up(x))` of `hidden → intermediate → hidden`, every token
/// routed to `top_k` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoeLayerConfig {
    /// Experts across the team: a multiple of its size (each rank holds `experts / size`).
    pub experts: u32,
    /// Experts per token (entries of `topk_idx` per token, `-1` for none), 1 to 16.
    pub top_k: u32,
    /// Elements per token row: the gate/up GEMM's K and the down GEMM's N; a multiple of 8.
    pub hidden: u32,
    /// The experts' inner width: the down GEMM's K; a multiple of 8.
    pub intermediate: u32,
    /// The most tokens any PE passes to one call.
    pub max_tokens: u32,
}

impl MoeLayerConfig {
    /// The dispatch's shape (rows of bf16, no padding: the masked layout).
    fn moe(&self) -> MoeConfig {
        MoeConfig {
            experts: self.experts,
            top_k: self.top_k,
            hidden: self.hidden,
            max_tokens: self.max_tokens,
            align: 1,
            payload: MoePayload::Bf16,
        }
    }

    /// Checks the shape for a team of `size` ranks; the message says what is wrong.
    fn check(&self, call: &'static str, size: usize) -> Result<()> {
        self.moe().check(call, size)?;
        let bad = |message: String| Err(Error::InvalidArgument { call, message });
        let (h, i) = (self.hidden, self.intermediate);
        if h % 8 != 0 || i == 0 || i % 8 != 0 {
            return bad(format!(
                "hidden = {h}, intermediate = {i}: each must be a positive multiple of 8 (they \
                 are the two GEMMs' K, whose rows TMA loads in 16-byte pieces)"
            ));
        }
        let local = (self.experts as usize / size) as u64;
        let rows = local * size as u64 * u64::from(self.max_tokens);
        if rows > u64::from(u32::MAX) || 2 * u64::from(i) > u64::from(u32::MAX) {
            return bad(format!(
                "{local} local experts x {size} PEs x {} tokens: more rows than 32-bit indices \
                 count; pass fewer tokens per call",
                self.max_tokens
            ));
        }
        Ok(())
    }
}

/// The buffers of a fused MoE layer (bf16 rows): the low-latency mode's fixed rows per local
/// expert (`size × max_tokens` each), into which each token's row lands directly, the
/// SwiGLU activations and the combine's rows, with the flags and counts. Made by
/// [`Ops::moe_layer_buffers`] on every PE of the team; one set serves any number of layers
/// of its shape (each with its [`MoeLayerWeights`]), called one after another.
pub struct MoeLayerBuffers<'s> {
    /// This buffer set among the process's (what weights are bound to).
    id: u64,
    config: MoeLayerConfig,
    team: Team,
    size: u32,
    /// The team as the GEMM kernels take it.
    ranks: Ranks,
    /// Every member reached through a peer mapping: the gate/up GEMM's waits spin on the
    /// flags (`moe_gate_up90`, else `moe_gate_up90_unmapped`).
    mapped: bool,
    /// And at most `MAX_PEERS` of them: the down GEMM stores every row itself (no push).
    direct: bool,
    /// Per rank: the down GEMM keeps its rows in `recv_x` and `moe_layer_push` puts them.
    puts: Vec<bool>,
    /// The low-latency mode's buffers the layer shares (not its staging: the rows land in
    /// their final rows).
    shared: LlShared<'s>,
    /// The dispatched rows (bf16), in the low-latency layout.
    recv_x: SymBuffer<'s, bf16>,
    count_flags: SymBuffer<'s, u64>,
    counts_all: SymBuffer<'s, u32>,
    entries: SymBuffer<'s, u32>,
    src_base: SymBuffer<'s, u32>,
    src_words: SymBuffer<'s, u32>,
    sent: SymBuffer<'s, u32>,
    act: SymBuffer<'s, bf16>,
}

/// Numbers the buffer sets of the process (an address could be reused by a later set).
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One layer's expert weights, bound to a [`MoeLayerBuffers`] (their tensor maps, made by
/// [`Ops::moe_layer_weights`], describe both): `gate_up` holds this PE's local experts' W₁,
/// `local × 2 intermediate × hidden` bf16 with the gate's and up's rows interleaved
/// ([`interleave_gate_up`]), `down` their W₂, `local × hidden × intermediate` (both `out ×
/// in`, as a `Linear`'s weight is stored).
pub struct MoeLayerWeights<'w, 's> {
    /// `[A, B]` of the gate/up GEMM, then of the down GEMM.
    maps: SymBuffer<'s, TensorMap>,
    /// The buffers the maps' A describe ([`MoeLayerBuffers`]' id).
    bound_to: u64,
    _weights: (SymRange<'w, bf16>, SymRange<'w, bf16>),
}

/// W₁ of `experts` experts from their gate and up projections (each `experts × intermediate
/// × hidden`, `out × in`): rows interleaved by pairs, expert by expert (row `2j` of an expert
/// is its gate's row `j`, row `2j + 1` its up's), the layout [`Ops::moe_layer`]'s SwiGLU
/// epilogue reads (`rshmem_gemm::glu` says why pairs).
///
/// ```
/// let (gate, up) = ([1, 2, 3, 4], [5, 6, 7, 8]); // 1 expert, intermediate 2, hidden 2
/// assert_eq!(rshmem_ops::moe::interleave_gate_up(&gate, &up, 1, 2, 2), [1, 2, 5, 6, 3, 4, 7, 8]);
/// ```
pub fn interleave_gate_up<T: Copy>(
    gate: &[T],
    up: &[T],
    experts: usize,
    intermediate: usize,
    hidden: usize,
) -> Vec<T> {
    let rows = experts * intermediate;
    assert!(
        gate.len() == rows * hidden && up.len() == rows * hidden,
        "gate and up must each hold experts x intermediate x hidden = {rows} x {hidden} elements"
    );
    gate.chunks(hidden)
        .zip(up.chunks(hidden))
        .flat_map(|(g, u)| g.iter().chain(u).copied())
        .collect()
}

impl<'s> MoeLayerBuffers<'s> {
    /// The shape the buffers were made for.
    pub fn config(&self) -> MoeLayerConfig {
        self.config
    }

    /// Rows each local expert owns in [`MoeLayerBuffers::recv_x`] and
    /// [`MoeLayerBuffers::activations`]: `size × max_tokens`.
    pub fn rows_per_expert(&self) -> usize {
        (self.size * self.config.max_tokens) as usize
    }

    /// The dispatched rows (`local × rows_per_expert × hidden`): local expert `j`'s are rows
    /// `j × rows_per_expert ..`, the first `recv_count[j]` of them valid, by source rank, then
    /// in the source's entry order. After a call, the rows of a source the down GEMM puts to
    /// ([`MoeLayerBuffers::puts_to`]) hold its output for them instead (kept here for the
    /// put).
    pub fn recv_x(&self) -> &SymBuffer<'s, bf16> {
        &self.recv_x
    }

    /// Each dispatched row's source: `[rank, entry]`, the entry `t × top_k + kk` of that
    /// rank's call.
    pub fn recv_src(&self) -> &SymBuffer<'s, u32> {
        &self.shared.recv_src
    }

    /// Whether this PE's down GEMM keeps the output rows for rank `rank` in
    /// [`MoeLayerBuffers::recv_x`] (in place of their dispatched rows) and puts them there
    /// after the GEMM: the rank is not reached through a peer mapping (another node), or is
    /// past the eighth of the team (the epilogue's table of mapped ranks).
    pub fn puts_to(&self, rank: u32) -> bool {
        self.puts.get(rank as usize).copied().unwrap_or(true)
    }

    /// Each local expert's dispatched rows (a device buffer).
    pub fn recv_count(&self) -> &SymBuffer<'s, u32> {
        &self.shared.recv_count
    }

    /// SwiGLU's output for the dispatched rows, row for row as
    /// [`MoeLayerBuffers::recv_x`] (`intermediate` wide): the down GEMM's input.
    pub fn activations(&self) -> &SymBuffer<'s, bf16> {
        &self.act
    }

    /// The down GEMM's output rows of this PE's entries, as they arrived from the experts'
    /// ranks: row `t × top_k + kk` (`hidden` wide) is entry `(t, kk)`'s; what the combine
    /// weighs and sums. Rows of `-1` entries are stale.
    pub fn combine_rows(&self) -> &SymBuffer<'s, bf16> {
        &self.shared.combine_recv
    }

    /// The first `topk_idx` entry of the latest call that was skipped, as `(token, entry)`:
    /// neither an expert nor `-1`, or a second entry of the same expert past `max_tokens`
    /// rows of this PE for it (a token listing one expert twice can make one). Waits for the
    /// PE's work (the call checks no entry on the host).
    pub fn skipped_entry(&self) -> Result<Option<(u32, u32)>> {
        self.shared.skipped_entry(self.config.top_k)
    }

    /// Bytes of symmetric memory the buffers take on each PE.
    pub fn bytes(&self) -> usize {
        self.shared.bytes()
            + bytes(&self.recv_x)
            + bytes(&self.count_flags)
            + bytes(&self.counts_all)
            + bytes(&self.entries)
            + bytes(&self.src_base)
            + bytes(&self.src_words)
            + bytes(&self.sent)
            + bytes(&self.act)
    }

    /// The local experts.
    fn local(&self) -> u32 {
        self.config.experts / self.size
    }

    /// The kernels' view of the buffers.
    fn device(&mut self) -> LayerBufs {
        let null = std::ptr::null_mut();
        LayerBufs {
            // The layer's rows land in their final rows: no staging.
            ll: self.shared.device(
                (null, null.cast(), null.cast()),
                (self.recv_x.as_mut_ptr().cast(), null.cast()),
            ),
            count_flags: self.count_flags.as_mut_ptr(),
            counts_all: self.counts_all.as_mut_ptr(),
            entries: self.entries.as_mut_ptr(),
            src_base: self.src_base.as_mut_ptr(),
            src_words: self.src_words.as_mut_ptr(),
            sent: self.sent.as_mut_ptr(),
            act: self.act.as_mut_ptr(),
        }
    }

    /// The two GEMMs' shapes: (gate/up, down), over every expert's rows.
    fn gemms(&self) -> (GemmShape, GemmShape) {
        let m = self.local() * self.rows_per_expert() as u32;
        let (h, i) = (self.config.hidden, self.config.intermediate);
        (
            GemmShape::new(m, 2 * i, h, BLayout::NK),
            GemmShape::new(m, h, i, BLayout::NK),
        )
    }
}

/// `team` as world PEs `start + r × stride` ([`Ranks`]); every NVSHMEM team is strided, and
/// the error says so if one is not.
fn strided(shmem: &Shmem, call: &'static str, team: Team, size: u32, rank: u32) -> Result<Ranks> {
    let world = |r: usize| {
        shmem
            .team_translate_pe(team, r, Team::WORLD)
            .map(|pe| pe as u32)
    };
    let start = world(0).unwrap_or(0);
    let stride = if size > 1 {
        world(1).unwrap_or(0).wrapping_sub(start)
    } else {
        1
    };
    let ranks = Ranks {
        start,
        stride,
        size,
        rank,
    };
    if (0..size).any(|r| world(r as usize) != Some(ranks.world(r) as u32)) {
        return Err(Error::Unsupported {
            call,
            reason: format!(
                "over team {team:?}, whose world PEs are not evenly strided (the fused layer's \
                 kernels number ranks start + rank x stride)"
            ),
        });
    }
    Ok(ranks)
}

impl<'s> Ops<'s> {
    /// The buffers of a fused MoE layer of shape `config` over `team`: every member calls it
    /// with the same `config` (the allocations are symmetric). See [`crate::moe`] for the
    /// layer's rules.
    pub fn moe_layer_buffers(
        &self,
        team: Team,
        config: MoeLayerConfig,
    ) -> Result<MoeLayerBuffers<'s>> {
        const CALL: &str = "Ops::moe_layer_buffers";
        let size = self.moe_team_size(CALL, team)?;
        config.check(CALL, size as usize)?;
        self.moe_layer_modules(CALL)?;
        let shmem: &'s Shmem = self.shmem;
        let call = config.moe().call(size, 0, 0);
        let (n, r, kk, i) = (
            size as usize,
            config.max_tokens as usize,
            config.top_k as usize,
            config.intermediate as usize,
        );
        let (local, cw) = (call.local_experts() as usize, call.count_words() as usize);
        let rows = local * n * r;
        let rank = shmem
            .team_my_pe(team)
            .expect("a member: checked by moe_team_size") as u32;
        let ranks = strided(shmem, CALL, team, size, rank)?;
        let words: Vec<u32> = (0..(r * kk) as u32).flat_map(|e| [rank, e]).collect();
        Ok(MoeLayerBuffers {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            config,
            team,
            size,
            ranks,
            mapped: (0..n).all(|r| {
                shmem
                    .team_translate_pe(team, r, Team::WORLD)
                    .is_some_and(|pe| self.coll.is_mapped(pe))
            }),
            direct: self.coll.team_mapped(team, n),
            puts: (0..n)
                .map(|r| {
                    r >= rshmem_coll::MAX_PEERS
                        || !shmem
                            .team_translate_pe(team, r, Team::WORLD)
                            .is_some_and(|pe| self.coll.is_mapped(pe))
                })
                .collect(),
            shared: LlShared::new(shmem, &call)?,
            recv_x: shmem.alloc_zeroed(rows * config.hidden as usize)?,
            count_flags: shmem.alloc_zeroed(n)?,
            counts_all: shmem.alloc_zeroed(n * n * cw)?,
            entries: shmem.alloc_zeroed(call.experts as usize * r)?,
            src_base: shmem.alloc_zeroed(local * (n + 1))?,
            src_words: shmem.alloc_from(&words)?,
            sent: shmem.alloc_zeroed(call.experts as usize)?,
            act: shmem.alloc_zeroed(rows * i)?,
        })
    }

    /// Binds one layer's expert weights to `bufs` (see [`MoeLayerWeights`] for their
    /// layouts): encodes the two GEMMs' tensor maps into a symmetric buffer of their own.
    /// Collective (an allocation). Errors: a buffer shorter than the layer's weights, or
    /// not 16-byte aligned (TMA reads them).
    pub fn moe_layer_weights<'w>(
        &self,
        bufs: &MoeLayerBuffers<'s>,
        gate_up: impl Into<SymRange<'w, bf16>>,
        down: impl Into<SymRange<'w, bf16>>,
    ) -> Result<MoeLayerWeights<'w, 's>> {
        const CALL: &str = "Ops::moe_layer_weights";
        let (gate_up, down) = (gate_up.into(), down.into());
        let cfg = bufs.config;
        let (local, h, i) = (
            bufs.local() as usize,
            cfg.hidden as usize,
            cfg.intermediate as usize,
        );
        let need = local * 2 * i * h;
        check_lengths(
            CALL,
            &format!("{local} local experts of hidden {h}, intermediate {i}"),
            &[
                ("gate_up", gate_up.len(), need),
                ("down", down.len(), local * h * i),
            ],
        )?;
        for (what, addr) in [
            ("gate_up", gate_up.as_ptr() as u64),
            ("down", down.as_ptr() as u64),
        ] {
            if addr % 16 != 0 {
                return Err(Error::InvalidArgument {
                    call: CALL,
                    message: format!(
                        "`{what}` starts at an address that is not 16-byte aligned (TMA reads \
                         it): pass a buffer, or a range starting at a multiple of 8 elements"
                    ),
                });
            }
        }
        self.moe_layer_modules(CALL)?;
        let (first, second) = bufs.gemms();
        let groups = bufs.local();
        // The moe90 kernels run the default tile (`sm90::gemm`).
        let boxes = |shape: GemmShape| Boxes::of::<sm90::Tile256<bf16>>(shape.b_layout);
        let recv_x = &bufs.recv_x;
        let maps_1 = encode_sm90(self.shmem, recv_x, gate_up, first, groups, boxes(first))?;
        let maps_2 = encode_sm90(self.shmem, &bufs.act, down, second, groups, boxes(second))?;
        let maps = self
            .shmem
            .alloc_from(&[maps_1[0], maps_1[1], maps_2[0], maps_2[1]])?;
        Ok(MoeLayerWeights {
            maps,
            bound_to: bufs.id,
            _weights: (gate_up, down),
        })
    }

    /// The fused MoE layer on this PE's `tokens` tokens, queued on `stream`: `x` (`tokens ×
    /// hidden` bf16) goes to the ranks of its `topk_idx` experts (`tokens × top_k` i32, `-1`
    /// for none), each expert computes `down(silu(gate(x)) × up(x))` with `weights`, and `out`
    /// (`tokens × hidden`) gets `Σ topk_weights × expert output` over each token's valid
    /// entries, in entry order, in f32, rounded once to bf16 (a token without one gets zeros).
    ///
    /// Kernels only (nothing waits on the host), so a call records into a graph
    /// ([`Stream::capture`]) and each launch is a new call on whatever the inputs hold then.
    /// Collective over the buffers' team: every member makes the same calls in the same order
    /// (token counts may differ). Entries outside `-1 .. experts` are skipped, and reported by
    /// [`MoeLayerBuffers::skipped_entry`] (no host check: it would synchronise). Errors,
    /// before anything is queued: more tokens than `max_tokens`, a buffer shorter than the
    /// tokens need, weights bound to other buffers, a device that is not sm_90.
    #[allow(clippy::too_many_arguments)]
    pub fn moe_layer<'a>(
        &self,
        stream: &Stream<'_>,
        bufs: &mut MoeLayerBuffers<'s>,
        weights: &MoeLayerWeights<'_, 's>,
        x: impl Into<SymRange<'a, bf16>>,
        topk_idx: impl Into<SymRange<'a, i32>>,
        topk_weights: impl Into<SymRange<'a, f32>>,
        out: impl Into<SymRangeMut<'a, bf16>>,
        tokens: u32,
    ) -> Result<()> {
        const CALL: &str = "Ops::moe_layer";
        let (x, topk, tw, mut out) = (x.into(), topk_idx.into(), topk_weights.into(), out.into());
        if weights.bound_to != bufs.id {
            return Err(Error::InvalidArgument {
                call: CALL,
                message: "the weights were bound to another MoeLayerBuffers \
                          (Ops::moe_layer_weights(&bufs, ..) binds them to these)"
                    .into(),
            });
        }
        let cfg = bufs.config;
        check_tokens(CALL, tokens, cfg.max_tokens)?;
        let (t, h, kk) = (tokens as usize, cfg.hidden as usize, cfg.top_k as usize);
        check_lengths(
            CALL,
            &format!("{tokens} tokens"),
            &[
                ("x", x.len(), t * h),
                ("topk_idx", topk.len(), t * kk),
                ("topk_weights", tw.len(), t * kk),
                ("out", out.len(), t * h),
            ],
        )?;
        let (module, module90) = self.moe_layer_modules(CALL)?;
        let call: MoeCall = cfg.moe().call(bufs.size, tokens, 0);
        let (team, ranks, lb) = (bufs.team, bufs.ranks, bufs.device());
        let (mapped, direct) = (bufs.mapped, bufs.direct);
        let (one, wide) = self.moe_grids(bufs.size);
        let (first, second) = bufs.gemms();
        let (groups, per) = (bufs.local(), rows_per_expert(&call));
        let rows = GroupRows {
            sizes: bufs.shared.recv_count.as_ptr(),
            groups,
            masked_rows: per,
        };
        let gemm = |shape: GemmShape, at: usize| {
            let tiles = tiles_bound(per, groups, shape.m, shape.n, (sm90::BM, sm90::BN));
            let config = self.persistent(tiles, sm90::THREADS, sm90::SHARED_BYTES);
            let base = TensorMap::kernel_ptr(&weights.maps);
            // Device addresses: offsets only, never dereferenced here.
            let maps = Sm90Maps {
                a: base.wrapping_add(at),
                b: base.wrapping_add(at + 1),
            };
            let problem = Problem {
                m: shape.m,
                n: shape.n,
                k: shape.k,
            };
            (config, (maps, problem, rows, ranks, lb, call))
        };
        // SAFETY: every kernel's contract (rshmem_moe::layer, low_latency, route): the buffers
        // are this PE's of the call's shape (one collective allocation: the same addresses on
        // every member); `x`, `topk`, `tw` and `out` hold `tokens` rows (checked), `x` in
        // symmetric memory; the maps describe `recv_x` and `act` (A) and the bound weights (B,
        // checked long enough and aligned), of bf16, 3-D for B, and live in `weights`, which
        // outlives the queued work (dropping a buffer waits for the PE's work); the steps are
        // queued in the order the module docs give, on one stream; blocks have THREADS >= size
        // threads (at most MAX_RANKS ranks); every member runs the same call (the rules).
        unsafe {
            module.launch_on::<k::moe_ll_begin>(stream, LaunchConfig::new(1, 32), (lb.ll,))?;
            queue_route::<k::moe_ll_route_count, k::moe_ll_route, _>(
                module,
                stream,
                &call,
                (lb.ll, topk.as_ptr(), call),
            )?;
            module.launch_on::<k::moe_layer_prepare>(
                stream,
                wide(tokens * cfg.top_k),
                (team, lb, topk.as_ptr(), call),
            )?;
            // Pieces of SEND_ROWS rows (at most one per expert more than the entries fill),
            // on at least a block per SM: with fewer entries the pieces shrink to match.
            let pieces = (tokens * cfg.top_k).div_ceil(SEND_ROWS) + cfg.experts;
            let blocks = pieces.max(self.info.multiprocessors);
            module.launch_on::<k::moe_layer_send>(
                stream,
                wide(blocks),
                (team, lb, x.as_ptr(), call),
            )?;
            let (config, args) = gemm(first, 0);
            if mapped {
                module90
                    .launch_on::<<Waits<true> as GateUp90<true>>::Kernel>(stream, config, args)?;
            } else {
                module90
                    .launch_on::<<Waits<false> as GateUp90<false>>::Kernel>(stream, config, args)?;
            }
            let (config, args) = gemm(second, 2);
            module90.launch_on::<moe90::moe_down90>(stream, config, args)?;
            if !direct {
                module.launch_on::<k::moe_layer_push>(stream, wide(per), (ranks, lb, call))?;
            }
            module.launch_on::<k::moe_ll_signal_combine>(stream, one, (team, lb.ll, call))?;
            module.launch_on::<k::moe_ll_combine_reduce>(
                stream,
                wide(tokens),
                (
                    team,
                    lb.ll,
                    topk.as_ptr(),
                    tw.as_ptr(),
                    out.as_mut_ptr(),
                    call,
                ),
            )?;
        }
        Ok(())
    }

    /// The MoE image and the fused layer's GEMMs (sm_90 only).
    fn moe_layer_modules(&self, call: &'static str) -> Result<(&Module<'s>, &Module<'s>)> {
        let module = self.moe_module(call)?;
        let module90 = self.moe90.as_ref().ok_or_else(|| Error::Unsupported {
            call,
            reason: format!(
                "on this PE's device, an sm_{}: the fused MoE layer runs on the Hopper GEMM \
                 (TMA + wgmma, sm_90: H100, H200); use moe_ll_dispatch, Ops::grouped_gemm \
                 and moe_ll_combine",
                self.info.sm
            ),
        })?;
        Ok((module, module90))
    }
}
