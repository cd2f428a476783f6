//! The fused MoE layer's cases (`moe_layer.rs`, `moe_layer_no_p2p.rs`): every PE makes every
//! PE's routing from one agreed seed (the dispatch cases' [`super::routing`]) and every
//! expert's weights from it, so each PE checks, after every call, each stage of what it
//! holds against an f64 reference of the *device's* inputs to that stage:
//!
//! * **dispatch**: per local expert, its count, and its rows (by source rank, then the
//!   source's token and entry order) bit for bit with their sources' `[rank, entry]`;
//! * **gate/up + SwiGLU**: each activation `bf16(silu(g) × u)`, `g`, `u` the f32 GEMMs of the
//!   received row with the expert's gate and up rows, within `2⁻⁸ |ref| + 2 δ`, where `δ =
//!   1.1 |u| e_g + (|g| + e_g) e_u + 10⁻⁶ |g u|`, `e_g = K 2⁻²³ Σ|x w_g|` (and `e_u`) the f32
//!   accumulation's bound over `K = hidden` exact products, `1.1` SiLU's largest slope, `10⁻⁶`
//!   `act::silu`'s own error; the 2 covers the second-order terms;
//! * **down**: each expert's output row, as its source received it (every source's
//!   `combine_rows` read with gets), within `2⁻⁸ |ref| + I 2⁻²³ Σ|a w|` of the device's
//!   activations times W₂ in f64 (`I = intermediate`);
//! * **combine**: each token within `2⁻⁸ |ref| + 2⁻²⁰ Σ|w y|` of `Σ weight × row` over its
//!   valid entries of the rows this PE received (`k ≤ 16` f32 terms), zeros for a token
//!   without one, nothing written past the tokens.
//!
//! Entries the layer skips (neither an expert nor `-1`, or an expert's entries of one rank
//! past `max_tokens`, which only a token listing an expert twice can make) are left out of
//! every stage's reference, and the first is what `skipped_entry` must say.
//!
//! The rows of ranks the down GEMM puts to (`MoeLayerBuffers::puts_to`: without peer
//! mappings, every other rank) hold its output in `recv_x` after the call (kept there for the
//! put): they are compared with what their source received instead.

use super::{check_sums, expected_rows, padded, routing, Case, Draw, Outcome, Routing};
use rshmem::{bf16, Shmem, Team};
use rshmem_ops::moe::interleave_gate_up;
use rshmem_ops::{MoeConfig, MoeLayerConfig, MoePayload, Ops};

/// A layer case: the shape, each PE's token count, how entries are drawn.
pub struct LayerCase {
    pub config: MoeLayerConfig,
    pub tokens: fn(pe: usize, npes: usize) -> usize,
    pub draw: Draw,
}

/// How a run goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Run {
    /// Calls, each on fresh routings and data.
    pub rounds: u64,
    /// The call recorded once into a graph, launched once per round (every 5th round an
    /// eager call instead: graph launches and eager calls share the call counter).
    pub graph: bool,
    /// PE 0's token 1 gets an entry that is no expert (skipped, reported).
    pub bad_entry: bool,
}

impl LayerCase {
    fn dispatch_case(&self) -> Case {
        let c = self.config;
        Case {
            config: MoeConfig {
                experts: c.experts,
                top_k: c.top_k,
                hidden: c.hidden,
                max_tokens: c.max_tokens,
                align: 1,
                payload: MoePayload::Bf16,
            },
            tokens: self.tokens,
            draw: self.draw,
        }
    }
}

/// A weight of `which` (1: gate, 2: up, 3: down) of expert `e` at `(r, c)`: a multiple of
/// 1/128 in [-1/4, 1/4] (exact in bf16), fresh per seed.
fn weight(seed: u64, which: u64, e: usize, r: usize, c: usize) -> f32 {
    let mut z = seed ^ which << 60 ^ (e as u64) << 44 ^ (r as u64) << 22 ^ c as u64;
    z = (z ^ z >> 30).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ z >> 27).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z % 65) as f32 - 32.0) / 128.0
}

/// Expert `e`'s `rows x cols` matrix `which`.
fn matrix(seed: u64, which: u64, e: usize, rows: usize, cols: usize) -> Vec<f32> {
    (0..rows * cols)
        .map(|x| weight(seed, which, e, x / cols, x % cols))
        .collect()
}

fn to_bf16(v: &[f32]) -> Vec<bf16> {
    v.iter().map(|&x| bf16::from_f32(x)).collect()
}

/// `Σ a[q] b[q]` and `Σ |a[q] b[q]|` in f64.
fn dot(a: impl Iterator<Item = f64>, b: &[f32]) -> (f64, f64) {
    a.zip(b).fold((0.0, 0.0), |(s, m), (x, &y)| {
        (s + x * y as f64, m + (x * y as f64).abs())
    })
}

const ACC: f64 = 1.0 / 8_388_608.0; // 2⁻²³

/// Which of `r`'s entries the layer skips (module docs), and the first of them.
fn skipped(cfg: &MoeLayerConfig, r: &Routing) -> (Vec<bool>, Option<(u32, u32)>) {
    let k = cfg.top_k as usize;
    let mut rows = vec![0u32; cfg.experts as usize];
    let skip: Vec<bool> = r
        .topk
        .iter()
        .map(|&e| {
            if e < 0 {
                return false;
            }
            if e as u32 >= cfg.experts {
                return true;
            }
            rows[e as usize] += 1;
            rows[e as usize] > cfg.max_tokens
        })
        .collect();
    let first = skip
        .iter()
        .position(|&s| s)
        .map(|i| ((i / k) as u32, (i % k) as u32));
    (skip, first)
}

/// Runs `run.rounds` calls of `case` over the world and checks every stage of each (module
/// docs).
pub fn run_layer(shmem: &Shmem, ops: &Ops, case: &LayerCase, run: Run) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let cfg = case.config;
    let (k, h, i_, r) = (
        cfg.top_k as usize,
        cfg.hidden as usize,
        cfg.intermediate as usize,
        cfg.max_tokens as usize,
    );
    let local = cfg.experts as usize / n;
    let seed = crate::common::agreed_seed(shmem)?;
    let mut bufs = ops.moe_layer_buffers(Team::WORLD, cfg)?;
    let per = bufs.rows_per_expert();
    // This PE's experts' weights (global expert `me × local + j`), and every expert's in f32.
    let gate: Vec<Vec<f32>> = (0..cfg.experts as usize)
        .map(|e| matrix(seed, 1, e, i_, h))
        .collect();
    let up: Vec<Vec<f32>> = (0..cfg.experts as usize)
        .map(|e| matrix(seed, 2, e, i_, h))
        .collect();
    let down: Vec<Vec<f32>> = (0..cfg.experts as usize)
        .map(|e| matrix(seed, 3, e, h, i_))
        .collect();
    let mine = me * local..(me + 1) * local;
    let w1 = interleave_gate_up(
        &to_bf16(&gate[mine.clone()].concat()),
        &to_bf16(&up[mine.clone()].concat()),
        local,
        i_,
        h,
    );
    let w1 = shmem.alloc_from(&w1)?;
    let w2 = shmem.alloc_from(&to_bf16(&down[mine].concat()))?;
    let weights = ops.moe_layer_weights(&bufs, &w1, &w2)?;
    let stream = shmem.stream();
    let mut x = shmem.alloc_zeroed::<bf16>(r * h)?;
    let mut topk = shmem.alloc_zeroed::<i32>(r * k)?;
    let mut tw = shmem.alloc_zeroed::<f32>(r * k)?;
    let mut out = shmem.alloc_zeroed::<bf16>(r * h)?;
    // Every source's combine rows, fetched here for the down GEMM's check.
    let mut fetched = shmem.alloc_zeroed::<bf16>(r * k * h)?;
    let dcase = case.dispatch_case();
    let mut graph = None;
    for round in 0..run.rounds {
        let mut all: Vec<Routing> = (0..n)
            .map(|pe| routing(&dcase, seed, round, pe, n))
            .collect();
        if run.bad_entry && all[0].tokens > 1 {
            all[0].topk[k] = cfg.experts as i32 + 3;
        }
        // What the device gets; the skipped entries then leave every stage's reference.
        let device_topk = all[me].topk.clone();
        let skips: Vec<_> = all.iter().map(|r| skipped(&cfg, r)).collect();
        for (r, (skip, _)) in all.iter_mut().zip(&skips) {
            for (e, &s) in r.topk.iter_mut().zip(skip) {
                if s {
                    *e = -1;
                }
            }
        }
        let mine = &all[me];
        x.copy_from_host(&padded(&mine.x16, r * h, bf16::from_f32(99.0)))?;
        topk.copy_from_host(&padded(&device_topk, r * k, 12345))?;
        tw.copy_from_host(&padded(&mine.weights, r * k, 7.0))?;
        out.copy_from_host(&vec![bf16::from_f32(-7.0); r * h])?;
        let tokens = mine.tokens as u32;
        if run.graph && graph.is_none() {
            // The first call of these buffers, recorded: nothing of it runs on the host.
            graph = Some(stream.capture(|| {
                ops.moe_layer(
                    &stream, &mut bufs, &weights, &x, &topk, &tw, &mut out, tokens,
                )
            })?);
        }
        match &graph {
            // SAFETY: every recorded buffer lives until the graph is dropped below; every PE
            // launches it at the same point of its calls.
            Some(g) => unsafe { g.launch(&stream)? },
            None => ops.moe_layer(
                &stream, &mut bufs, &weights, &x, &topk, &tw, &mut out, tokens,
            )?,
        }
        let ctx = |what: String| format!("PE {me} round {round}: {what}");
        // Dispatch.
        let want = expected_rows(&dcase.config, &all, me);
        let (recv_x, recv_src, counts, act, rows_here) = (
            bufs.recv_x().to_vec()?,
            bufs.recv_src().to_vec()?,
            bufs.recv_count().to_vec()?,
            bufs.activations().to_vec()?,
            bufs.combine_rows().to_vec()?,
        );
        for (j, want_j) in want.iter().enumerate() {
            assert_eq!(
                counts[j] as usize,
                want_j.len(),
                "{}",
                ctx(format!("expert {j}'s rows"))
            );
            for (q, &(s, t, kk)) in want_j.iter().enumerate() {
                let row = j * per + q;
                assert_eq!(
                    (recv_src[2 * row], recv_src[2 * row + 1]),
                    (s as u32, (t * k + kk) as u32),
                    "{}",
                    ctx(format!("expert {j} row {q}'s source"))
                );
                if !bufs.puts_to(s as u32) {
                    assert_eq!(
                        &recv_x[row * h..(row + 1) * h],
                        &all[s].x16[t * h..(t + 1) * h],
                        "{}",
                        ctx(format!("expert {j} row {q}: rank {s}'s token {t}"))
                    );
                }
            }
        }
        assert_eq!(
            bufs.skipped_entry()?,
            skips[me].1,
            "{}",
            ctx("the skipped entry".into())
        );
        // Gate/up + SwiGLU, from the received rows.
        for (j, want_j) in want.iter().enumerate() {
            let e = me * local + j;
            for (q, &(s, t, _)) in want_j.iter().enumerate() {
                let row = j * per + q;
                let xr = || all[s].x16[t * h..(t + 1) * h].iter().map(|v| v.to_f64());
                for c in 0..i_ {
                    let (g, sg) = dot(xr(), &gate[e][c * h..(c + 1) * h]);
                    let (u, su) = dot(xr(), &up[e][c * h..(c + 1) * h]);
                    let (eg, eu) = (h as f64 * ACC * sg, h as f64 * ACC * su);
                    let want = g / (1.0 + (-g).exp()) * u;
                    let delta = 1.1 * u.abs() * eg + (g.abs() + eg) * eu + 1e-6 * (g * u).abs();
                    let bound = want.abs() / 256.0 + 2.0 * delta;
                    let got = act[row * i_ + c].to_f64();
                    assert!(
                        (got - want).abs() <= bound,
                        "{}",
                        ctx(format!(
                            "activation of expert {j} row {q} col {c} = {got}, want {want} ± {bound}"
                        ))
                    );
                }
            }
        }
        // Down: what each source received for this PE's rows. Every PE's call is over first.
        shmem.barrier_all()?;
        for s in 0..n {
            stream.get(&mut fetched, bufs.combine_rows(), s)?;
            let theirs = fetched.to_vec()?;
            for (j, want_j) in want.iter().enumerate() {
                let e = me * local + j;
                for (q, &(src, t, kk)) in want_j.iter().enumerate() {
                    if src != s {
                        continue;
                    }
                    let (row, entry) = (j * per + q, t * k + kk);
                    let a = || act[row * i_..(row + 1) * i_].iter().map(|v| v.to_f64());
                    let got_row = &theirs[entry * h..(entry + 1) * h];
                    for c in 0..h {
                        let (want, mag) = dot(a(), &down[e][c * i_..(c + 1) * i_]);
                        let bound = want.abs() / 256.0 + i_ as f64 * ACC * mag;
                        let got = got_row[c].to_f64();
                        assert!(
                            (got - want).abs() <= bound,
                            "{}",
                            ctx(format!(
                                "down output of expert {j} row {q} col {c} at rank {s} = {got}, \
                                 want {want} ± {bound}"
                            ))
                        );
                    }
                    if bufs.puts_to(s as u32) {
                        assert_eq!(
                            &recv_x[row * h..(row + 1) * h],
                            got_row,
                            "{}",
                            ctx(format!("expert {j} row {q}: the row put to rank {s}"))
                        );
                    }
                }
            }
        }
        // Combine, from the rows this PE received.
        check_sums(
            &dcase.config,
            mine,
            &out.to_vec()?,
            &ctx("combine".into()),
            |t, kk, c| rows_here[(t * k + kk) * h + c].to_f64(),
        );
        // No PE starts the next call (its rows overwrite peers' buffers) before every PE's
        // gets above are done.
        shmem.barrier_all()?;
    }
    drop(graph);
    shmem.barrier_all()?;
    Ok(())
}
