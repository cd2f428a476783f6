//! The low-latency mode's cases (`moe_ll.rs` on every backend, `moe_no_p2p.rs` without peer
//! mappings): dispatch + combine pairs on fresh routings (every PE draws every PE's from one
//! agreed seed), bf16 or FP8 rows, eagerly or as two recorded graphs launched once per round.
//!
//! * Dispatch: per local expert, the count, each row's source `(rank, entry)` and its bytes
//!   (by source rank, then token order) are compared exactly; FP8 rows' scales too, where the
//!   FP8 grouped GEMM reads them (`[kb × m + row]`, `m = local × rows_per_expert`).
//! * Combine, with [`Experts::Host`]: the experts' output is `moe_cases::g` of each row,
//!   computed on the host (the bound of `moe_cases`' module docs).
//! * With [`Experts::Fp8Gemm`] (FP8 rows): the experts are one `Ops::grouped_gemm_fp8` over
//!   the received rows in the masked layout of the device counts, checked as [`super::fp8`]
//!   says.

use super::fp8::{check_fp8_experts, Weights};
pub use super::Experts;
use super::{
    check_combined, element, expected_rows, g, padded, routing, row_bytes, scales_per_row, Case,
    Outcome, Routing,
};
use rshmem::{bf16, Shmem, Stream, SymBuffer, Team};
use rshmem_ops::{GroupRows, MoeConfig, MoeLlBuffers, MoePayload, Ops};

/// How a case runs.
#[derive(Clone, Copy, Debug)]
pub struct Ll {
    /// Dispatch + combine pairs, each on a fresh routing.
    pub rounds: u64,
    /// Record the dispatch and the combine into two graphs on the first round and launch
    /// them every round (a graph records its token counts: every round has the same).
    pub graphs: bool,
    /// PE 0's token 1 gets an entry that is no expert: skipped, and reported.
    pub bad: bool,
    /// What the experts are.
    pub experts: Experts,
}

impl Ll {
    /// `rounds` eager rounds, host experts.
    pub const fn rounds(rounds: u64) -> Self {
        Self {
            rounds,
            graphs: false,
            bad: false,
            experts: Experts::Host,
        }
    }
}

/// This PE's inputs of a round, the largest call's size on every PE (allocations are
/// symmetric).
struct Inputs<'s> {
    x16: SymBuffer<'s, bf16>,
    x8: SymBuffer<'s, u8>,
    scales: SymBuffer<'s, f32>,
    topk: SymBuffer<'s, i32>,
    weights: SymBuffer<'s, f32>,
}

impl<'s> Inputs<'s> {
    fn new(shmem: &'s Shmem, cfg: &MoeConfig) -> rshmem::Result<Self> {
        let (k, h, r) = (
            cfg.top_k as usize,
            cfg.hidden as usize,
            cfg.max_tokens as usize,
        );
        Ok(Self {
            x16: shmem.alloc_zeroed(r * h)?,
            x8: shmem.alloc_zeroed(r * h)?,
            scales: shmem.alloc_zeroed((r * scales_per_row(cfg)).max(1))?,
            topk: shmem.alloc_zeroed(r * k)?,
            weights: shmem.alloc_zeroed(r * k)?,
        })
    }

    /// `mine`'s tokens, poisoned past them.
    fn fill(&mut self, cfg: &MoeConfig, mine: &Routing) -> rshmem::Result<()> {
        let (k, h, r) = (
            cfg.top_k as usize,
            cfg.hidden as usize,
            cfg.max_tokens as usize,
        );
        match cfg.payload {
            MoePayload::Bf16 => {
                self.x16
                    .copy_from_host(&padded(&mine.x16, r * h, bf16::from_f32(99.0)))?
            }
            MoePayload::Fp8E4m3 => {
                let sr = scales_per_row(cfg);
                self.x8.copy_from_host(&padded(&mine.x8, r * h, 0x5A))?;
                self.scales
                    .copy_from_host(&padded(&mine.scales, (r * sr).max(1), 9.0))?;
            }
        }
        self.topk
            .copy_from_host(&padded(&mine.topk, r * k, 12345))?;
        self.weights
            .copy_from_host(&padded(&mine.weights, r * k, 7.0))
    }
}

/// The dispatch of the buffers' payload.
fn dispatch<'s>(
    ops: &Ops<'s>,
    stream: &Stream<'_>,
    ll: &mut MoeLlBuffers<'s>,
    inp: &Inputs<'s>,
    tokens: u32,
) -> rshmem::Result<()> {
    match ll.config().payload {
        MoePayload::Bf16 => ops.moe_ll_dispatch(stream, ll, &inp.x16, &inp.topk, tokens),
        MoePayload::Fp8E4m3 => {
            ops.moe_ll_dispatch_fp8(stream, ll, &inp.x8, &inp.scales, &inp.topk, tokens)
        }
    }
}

/// The experts as one FP8 grouped GEMM over `ll`'s received rows: the masked layout of its
/// device counts.
fn experts_fp8<'s>(
    ops: &Ops<'s>,
    stream: &Stream<'_>,
    ll: &MoeLlBuffers<'s>,
    w: &Weights<'s>,
    eo: &mut SymBuffer<'s, bf16>,
) -> rshmem::Result<()> {
    let rows = GroupRows::Masked {
        counts: ll.recv_count().into(),
        max_m: ll.rows_per_expert() as u32,
    };
    w.run(ops, stream, ll.recv_x_fp8()?, rows, eo)
}

/// Checks the rows `ll` received against `all`'s routings (module docs); returns the
/// experts' output for them as [`Experts::Host`] makes it (`g` of each row) and the rows in
/// all.
fn check_received(
    me: usize,
    round: u64,
    ll: &MoeLlBuffers<'_>,
    all: &[Routing],
) -> Result<(Vec<bf16>, usize), rshmem::BoxError> {
    let cfg = ll.config();
    let (k, h, n) = (cfg.top_k as usize, cfg.hidden as usize, all.len());
    let (local, per) = (cfg.experts as usize / n, ll.rows_per_expert());
    let (m, sr) = (local * per, scales_per_row(&cfg));
    let (recv_x, recv_scales): (Vec<u8>, Vec<f32>) = match cfg.payload {
        MoePayload::Bf16 => (
            bytemuck::cast_slice(&ll.recv_x()?.to_vec()?).to_vec(),
            vec![],
        ),
        MoePayload::Fp8E4m3 => {
            let (x, scales) = ll.recv_x_fp8()?;
            (x.to_vec()?, scales.to_vec()?)
        }
    };
    let db = recv_x.len() / m;
    assert_eq!(recv_scales.len(), sr * m, "the scales' length");
    let (recv_src, counts) = (ll.recv_src().to_vec()?, ll.recv_count().to_vec()?);
    let ctx = |what: String| format!("PE {me} round {round}: {what}");
    let mut expert_out = vec![bf16::ZERO; m * h];
    let mut rows = 0;
    for (j, want_j) in expected_rows(&cfg, all, me).iter().enumerate() {
        assert_eq!(
            counts[j] as usize,
            want_j.len(),
            "{}",
            ctx(format!("expert {j}'s rows"))
        );
        for (i, &(s, t, kk)) in want_j.iter().enumerate() {
            let row = j * per + i;
            assert_eq!(
                (recv_src[2 * row], recv_src[2 * row + 1]),
                (s as u32, (t * k + kk) as u32),
                "{}",
                ctx(format!("expert {j} row {i}'s source"))
            );
            assert!(
                recv_x[row * db..(row + 1) * db] == *row_bytes(&cfg, &all[s], t),
                "{}",
                ctx(format!("expert {j} row {i}: not rank {s}'s token {t}"))
            );
            for kb in 0..sr {
                assert_eq!(
                    recv_scales[kb * m + row].to_bits(),
                    all[s].scales[t * sr + kb].to_bits(),
                    "{}",
                    ctx(format!(
                        "expert {j} row {i}'s scale {kb} (rank {s}'s token {t})"
                    ))
                );
            }
            for e in 0..h {
                expert_out[row * h + e] = g(element(&cfg, &all[s], t, e), j as u32);
            }
        }
        rows += want_j.len();
    }
    Ok((expert_out, rows))
}

/// Runs `how.rounds` dispatch + combine pairs of `case` (see the module docs).
pub fn run<'s>(shmem: &'s Shmem, ops: &Ops<'s>, case: &Case, how: Ll) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let cfg = case.config;
    let (k, h, r) = (
        cfg.top_k as usize,
        cfg.hidden as usize,
        cfg.max_tokens as usize,
    );
    let seed = crate::common::agreed_seed(shmem)?;
    let mut ll = ops.moe_ll_buffers(Team::WORLD, cfg)?;
    let stream = shmem.stream();
    let local = cfg.experts as usize / n;
    let per = ll.rows_per_expert();
    let mut inp = Inputs::new(shmem, &cfg)?;
    let mut out = shmem.alloc_zeroed::<bf16>(r * h)?;
    let mut eo = shmem.alloc_zeroed::<bf16>(local * per * h)?;
    let weights = match how.experts {
        Experts::Fp8Gemm => Some(Weights::new(shmem, &cfg, seed)?),
        Experts::Host => None,
    };
    let mut worst = 0f64;
    let tokens_of = |pe: usize| (case.tokens)(pe, n);
    let mut graph_pair = None;
    for round in 0..how.rounds {
        let mut all: Vec<Routing> = (0..n).map(|pe| routing(case, seed, round, pe, n)).collect();
        if how.bad && all[0].tokens > 1 {
            all[0].topk[k] = cfg.experts as i32 + 5;
        }
        let mine = &all[me];
        assert_eq!(mine.tokens, tokens_of(me));
        inp.fill(&cfg, mine)?;
        out.copy_from_host(&vec![bf16::from_f32(-7.0); r * h])?;
        let tokens = mine.tokens as u32;
        if how.graphs && graph_pair.is_none() {
            let d = stream.capture(|| dispatch(ops, &stream, &mut ll, &inp, tokens))?;
            let (topk, w) = (&inp.topk, &inp.weights);
            let c =
                stream.capture(|| ops.moe_ll_combine(&stream, &mut ll, &eo, topk, w, &mut out))?;
            graph_pair = Some((d, c));
        }
        match &graph_pair {
            // SAFETY: the recorded buffers (the inputs, the MoE buffers, eo, out) live until
            // the graphs are dropped below; every PE launches them in the same order.
            Some((d, _)) => unsafe { d.launch(&stream)? },
            None => dispatch(ops, &stream, &mut ll, &inp, tokens)?,
        }
        let (expert_out, rows) = check_received(me, round, &ll, &all)?;
        let skipped = ll.skipped_entry()?;
        let expect_skip = (how.bad && me == 0 && mine.tokens > 1).then_some((1, 0));
        assert_eq!(
            skipped, expect_skip,
            "PE {me} round {round}: the skipped entry"
        );
        match &weights {
            Some(w) => experts_fp8(ops, &stream, &ll, w, &mut eo)?,
            None => eo.copy_from_host(&expert_out)?,
        }
        match &graph_pair {
            // SAFETY: as for the dispatch graph.
            Some((_, c)) => unsafe { c.launch(&stream)? },
            None => ops.moe_ll_combine(&stream, &mut ll, &eo, &inp.topk, &inp.weights, &mut out)?,
        }
        let got = out.to_vec()?;
        match &weights {
            Some(w) => {
                let what = format!("PE {me} round {round}, {rows} rows received");
                worst = worst.max(check_fp8_experts(
                    shmem.backend(),
                    &cfg,
                    mine,
                    w,
                    &got,
                    &what,
                ));
            }
            None => check_combined(&cfg, mine, &got, (me, n, round), rows),
        }
    }
    if weights.is_some() {
        println!("PE {me}: FP8 experts, worst error {worst:.3} of the bound");
    }
    drop(graph_pair);
    shmem.barrier_all()?;
    Ok(())
}
