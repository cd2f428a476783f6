//! The MoE dispatch and combine cases, shared by `moe.rs` (every backend) and `moe_no_p2p.rs`
//! (the simulator without peer mappings). Every PE makes every PE's routing from one agreed
//! seed, so each can work out, on the host, exactly what it must receive and what its tokens'
//! outputs must be.
//!
//! * Dispatch: the received rows, their order (per local expert, by source rank, token and
//!   entry), sources, weights, the layout's offsets and counts and the zero padding are
//!   compared exactly (a dispatch moves bits).
//! * Combine: the experts' output is `g(x, j) = x × (j + 1) / 4 + 1/8` per element (bf16),
//!   computed on the host from the received rows; each token's output is compared with
//!   `Σ weight × g` over its entries computed in f64, within `2⁻⁸ |ref| + 2⁻²⁰ Σ |terms|`: the
//!   rounding of the result to bf16 (half an ulp is 2⁻⁹ relative) plus f32 sums of at most
//!   16 terms (each `≤ 2⁻²⁴ Σ |terms|`), with room for an FMA the GPU may contract.

#![allow(dead_code)]

pub mod fp8;
pub mod layer;
pub mod ll;

use rshmem::{bf16, Shmem, Stream, SymBuffer, Team};
use rshmem_ops::{GroupRows, MoeBuffers, MoeConfig, MoeLayout, MoePayload, Ops};

pub type Outcome = Result<(), rshmem::BoxError>;

/// One PE's routing and data for one call.
pub struct Routing {
    pub tokens: usize,
    pub topk: Vec<i32>,
    pub weights: Vec<f32>,
    /// The rows' elements: bf16 values, or FP8 e4m3 bytes (`hidden` per row).
    pub x16: Vec<bf16>,
    pub x8: Vec<u8>,
    /// FP8 rows' scales, `⌈hidden / 128⌉` per row (empty for bf16).
    pub scales: Vec<f32>,
}

/// How a case draws each PE's routing.
#[derive(Clone, Copy, Debug)]
pub enum Draw {
    /// Distinct random experts per token, about one entry in `none_in` left `-1`.
    Random { none_in: u32 },
    /// Every token to the last expert alone (its other entries `-1`).
    ToLast,
    /// Only experts of rank 0 (the other ranks receive nothing).
    OnlyRank0,
    /// Every token lists expert 0 in its first two entries (a router never does: the fused
    /// layer skips what its rows cannot hold, and reports it).
    Twice,
}

/// What the experts are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Experts {
    /// `moe_cases::g` of each received row, on the host.
    Host,
    /// One FP8 grouped GEMM over the received rows as they are (FP8 rows; `hidden` a
    /// multiple of 16), checked as [`fp8`] says.
    Fp8Gemm,
}

/// A case: the layer's shape, each PE's token count, and how entries are drawn.
pub struct Case {
    pub config: MoeConfig,
    pub tokens: fn(pe: usize, npes: usize) -> usize,
    pub draw: Draw,
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// PE `pe`'s routing of call `round` for `case`, the same on every PE.
pub fn routing(case: &Case, seed: u64, round: u64, pe: usize, npes: usize) -> Routing {
    let cfg = case.config;
    let (k, h) = (cfg.top_k as usize, cfg.hidden as usize);
    let tokens = (case.tokens)(pe, npes);
    let mut st = seed ^ (pe as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round << 40 | 1;
    let mut topk = vec![-1i32; tokens * k];
    let mut weights = vec![0f32; tokens * k];
    let local = cfg.experts / npes as u32;
    for t in 0..tokens {
        let row = &mut topk[t * k..(t + 1) * k];
        match case.draw {
            Draw::Random { none_in } => {
                for kk in 0..k {
                    if xorshift(&mut st) % none_in as u64 == 0 {
                        continue;
                    }
                    // Distinct experts per token, as a router's top-k gives them.
                    loop {
                        let e = (xorshift(&mut st) % cfg.experts as u64) as i32;
                        if !row[..kk].contains(&e) {
                            row[kk] = e;
                            break;
                        }
                    }
                }
            }
            Draw::ToLast => row[0] = cfg.experts as i32 - 1,
            Draw::Twice => {
                row[0] = 0;
                if k > 1 {
                    row[1] = 0;
                }
            }
            Draw::OnlyRank0 => {
                for kk in 0..k.min(local as usize) {
                    row[kk] =
                        ((kk as u64 + xorshift(&mut st) % local as u64) % local as u64) as i32;
                    if row[..kk].contains(&row[kk]) {
                        row[kk] = -1;
                    }
                }
            }
        }
        for kk in 0..k {
            weights[t * k + kk] = (xorshift(&mut st) % 1000) as f32 / 1000.0 + 0.001;
        }
    }
    let (mut x16, mut x8, mut scales) = (Vec::new(), Vec::new(), Vec::new());
    match cfg.payload {
        MoePayload::Bf16 => {
            x16 = (0..tokens * h)
                .map(|_| bf16::from_f32(((xorshift(&mut st) % 2001) as f32 - 1000.0) / 256.0))
                .collect()
        }
        MoePayload::Fp8E4m3 => {
            // Rows over many binades, quantised per token and 128 channels as a model's
            // activations are (the host helper under test too).
            let x: Vec<bf16> = (0..tokens * h)
                .map(|_| {
                    let r = xorshift(&mut st);
                    let mag =
                        2f32.powi((r % 24) as i32 - 12) * (1.0 + (r >> 16) as u8 as f32 / 256.0);
                    bf16::from_f32(if r >> 40 & 1 == 1 { -mag } else { mag })
                })
                .collect();
            let q = rshmem_ops::fp8::quantize(&x, tokens, h, rshmem_ops::fp8::Blocks::PER_TOKEN);
            (x8, scales) = (q.bytes, q.scales);
        }
    }
    Routing {
        tokens,
        topk,
        weights,
        x16,
        x8,
        scales,
    }
}

/// Token `t`'s row as bytes.
pub fn row_bytes<'r>(cfg: &MoeConfig, r: &'r Routing, t: usize) -> &'r [u8] {
    let h = cfg.hidden as usize;
    match cfg.payload {
        MoePayload::Bf16 => bytemuck::cast_slice(&r.x16[t * h..(t + 1) * h]),
        MoePayload::Fp8E4m3 => &r.x8[t * h..(t + 1) * h],
    }
}

/// Scales per FP8 row.
pub fn scales_per_row(cfg: &MoeConfig) -> usize {
    match cfg.payload {
        MoePayload::Bf16 => 0,
        MoePayload::Fp8E4m3 => (cfg.hidden as usize).div_ceil(128),
    }
}

/// Element `e` of token `t`'s row as a value: the bf16 itself, or the FP8 byte times its
/// scale.
pub fn element(cfg: &MoeConfig, r: &Routing, t: usize, e: usize) -> f32 {
    let h = cfg.hidden as usize;
    match cfg.payload {
        MoePayload::Bf16 => r.x16[t * h + e].to_f32(),
        MoePayload::Fp8E4m3 => {
            rshmem_ops::fp8::to_f32(r.x8[t * h + e]) * r.scales[t * scales_per_row(cfg) + e / 128]
        }
    }
}

/// The experts' output for an element of value `x` in a row of local expert `j`.
pub fn g(x: f32, j: u32) -> bf16 {
    bf16::from_f32(x * (j as f32 + 1.0) / 4.0 + 0.125)
}

/// What rank `me` must receive: per local expert, its rows as (source rank, token, entry).
pub fn expected_rows(
    cfg: &MoeConfig,
    all: &[Routing],
    me: usize,
) -> Vec<Vec<(usize, usize, usize)>> {
    let n = all.len();
    let local = cfg.experts as usize / n;
    let k = cfg.top_k as usize;
    let mut rows = vec![Vec::new(); local];
    for (src, r) in all.iter().enumerate() {
        for t in 0..r.tokens {
            for kk in 0..k {
                let e = r.topk[t * k + kk];
                if e >= 0 && e as usize / local == me {
                    rows[e as usize % local].push((src, t, kk));
                }
            }
        }
    }
    rows
}

/// Runs `rounds` dispatch + combine calls of `case` on fresh routings over the world and
/// checks each (see the module docs).
pub fn run<'s>(shmem: &'s Shmem, ops: &Ops<'s>, case: &Case, rounds: u64) -> Outcome {
    run_with(shmem, ops, case, rounds, Experts::Host)
}

/// [`run`], the experts' output made as `experts` says.
pub fn run_with<'s>(
    shmem: &'s Shmem,
    ops: &Ops<'s>,
    case: &Case,
    rounds: u64,
    experts: Experts,
) -> Outcome {
    let (me, n) = (shmem.my_pe(), shmem.n_pes());
    let cfg = case.config;
    let (k, h) = (cfg.top_k as usize, cfg.hidden as usize);
    let seed = crate::common::agreed_seed(shmem)?;
    let mut bufs = ops.moe_buffers(Team::WORLD, cfg)?;
    let stream = shmem.stream();
    // Inputs and outputs of the largest call, the same size on every PE (allocations are
    // symmetric), refilled per round.
    let r = cfg.max_tokens as usize;
    let sr = scales_per_row(&cfg);
    let mut x16 = shmem.alloc_zeroed::<bf16>(r * h)?;
    let mut x8 = shmem.alloc_zeroed::<u8>(r * h)?;
    let mut scales = shmem.alloc_zeroed::<f32>((r * sr).max(1))?;
    let mut topk = shmem.alloc_zeroed::<i32>(r * k)?;
    let mut weights = shmem.alloc_zeroed::<f32>(r * k)?;
    let mut out = shmem.alloc_zeroed::<bf16>(r * h)?;
    let mut eo = shmem.alloc_zeroed::<bf16>(bufs.capacity() * h)?;
    let expert_w = match experts {
        Experts::Fp8Gemm => Some(fp8::Weights::new(shmem, &cfg, seed)?),
        Experts::Host => None,
    };
    let mut ends = shmem.alloc_zeroed::<u32>(cfg.experts as usize / n)?;
    let mut worst = 0f64;
    for round in 0..rounds {
        let all: Vec<Routing> = (0..n).map(|pe| routing(case, seed, round, pe, n)).collect();
        let mine = &all[me];
        match cfg.payload {
            MoePayload::Bf16 => {
                x16.copy_from_host(&padded(&mine.x16, r * h, bf16::from_f32(99.0)))?
            }
            MoePayload::Fp8E4m3 => {
                x8.copy_from_host(&padded(&mine.x8, r * h, 0x5A))?;
                scales.copy_from_host(&padded(&mine.scales, (r * sr).max(1), 9.0))?;
            }
        }
        topk.copy_from_host(&padded(&mine.topk, r * k, 12345))?;
        weights.copy_from_host(&padded(&mine.weights, r * k, 7.0))?;
        // Poisoned outputs: what the calls must overwrite.
        out.copy_from_host(&vec![bf16::from_f32(-7.0); r * h])?;
        let tokens = mine.tokens as u32;
        let layout = match cfg.payload {
            MoePayload::Bf16 => {
                ops.moe_dispatch(&stream, &mut bufs, &x16, &topk, &weights, tokens)?
            }
            MoePayload::Fp8E4m3 => {
                ops.moe_dispatch_fp8(&stream, &mut bufs, &x8, &scales, &topk, &weights, tokens)?
            }
        };
        let (expert_out, want_rows) = check_dispatch(shmem, &bufs, &layout, &all, round)?;
        match &expert_w {
            Some(w) => experts_fp8(ops, &stream, &bufs, &layout, w, &mut ends, &mut eo)?,
            None => eo.copy_from_host(&padded(
                &expert_out,
                bufs.capacity() * h,
                bf16::from_f32(55.0),
            ))?,
        }
        ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out)?;
        let got = out.to_vec()?;
        match &expert_w {
            Some(w) => {
                let what = format!("PE {me} round {round}, {want_rows} rows received");
                let backend = shmem.backend();
                worst = worst.max(fp8::check_fp8_experts(backend, &cfg, mine, w, &got, &what));
            }
            None => check_combined(&cfg, mine, &got, (me, n, round), want_rows),
        }
    }
    if expert_w.is_some() {
        println!("PE {me}: FP8 experts, worst error {worst:.3} of the bound");
    }
    Ok(())
}

/// The experts as one FP8 grouped GEMM over the rows `bufs` received, as they are: the
/// offsets layout of `layout` (`MoeLayout::group_ends`), over all `capacity` rows (the
/// scales' layout), into `eo`.
fn experts_fp8<'s>(
    ops: &Ops<'s>,
    stream: &Stream<'_>,
    bufs: &MoeBuffers<'s>,
    layout: &MoeLayout,
    w: &fp8::Weights<'s>,
    ends: &mut SymBuffer<'s, u32>,
    eo: &mut SymBuffer<'s, bf16>,
) -> rshmem::Result<()> {
    ends.copy_from_host(&layout.group_ends())?;
    let rows = GroupRows::Offsets {
        ends: (&*ends).into(),
        m: bufs.capacity() as u32,
    };
    w.run(ops, stream, bufs.recv_x_fp8()?, rows, eo)
}

/// Checks this PE's combined tokens `got` (`max_tokens × hidden`, poisoned with −7 past its
/// tokens) against `Σ weight × g` over each token's valid entries (module docs' bound).
pub fn check_combined(
    cfg: &MoeConfig,
    mine: &Routing,
    got: &[bf16],
    (me, n, round): (usize, usize, u64),
    rows: usize,
) {
    let local = cfg.experts as usize / n;
    check_sums(
        cfg,
        mine,
        got,
        &format!("PE {me} round {round}, {rows} rows received"),
        |t, kk, e| {
            let ex = mine.topk[t * cfg.top_k as usize + kk] as usize;
            g(element(cfg, mine, t, e), (ex % local) as u32).to_f64()
        },
    );
}

/// Checks `got` (`max_tokens × hidden`, poisoned with −7 past `mine`'s tokens): each token's
/// element `e` within `2⁻⁸ |ref| + 2⁻²⁰ Σ |terms|` of `Σ weight × row(t, kk, e)` over its valid
/// entries (the rounding of the f32 sum to bf16, and at most 16 f32 terms); nothing written past
/// the tokens. `what` says whose.
pub fn check_sums(
    cfg: &MoeConfig,
    mine: &Routing,
    got: &[bf16],
    what: &str,
    row: impl Fn(usize, usize, usize) -> f64,
) {
    let (k, h) = (cfg.top_k as usize, cfg.hidden as usize);
    for t in 0..mine.tokens {
        for e in 0..h {
            let (mut want, mut mag) = (0f64, 0f64);
            for kk in 0..k {
                let ex = mine.topk[t * k + kk];
                if ex >= 0 && (ex as u32) < cfg.experts {
                    let term = mine.weights[t * k + kk] as f64 * row(t, kk, e);
                    want += term;
                    mag += term.abs();
                }
            }
            let v = got[t * h + e].to_f64();
            let bound = want.abs() / 256.0 + mag / (1u64 << 20) as f64;
            assert!(
                (v - want).abs() <= bound,
                "{what}: out[{t}][{e}] = {v}, want {want} (bound {bound})"
            );
        }
    }
    assert!(
        got[mine.tokens * h..]
            .iter()
            .all(|&v| v == bf16::from_f32(-7.0)),
        "{what}: the combine wrote past this PE's tokens"
    );
}

/// `v` followed by `fill` up to `len` elements (what lies past this PE's tokens: never read).
pub fn padded<T: Copy>(v: &[T], len: usize, fill: T) -> Vec<T> {
    let mut out = v.to_vec();
    out.resize(len, fill);
    out
}

/// Checks this PE's received rows against `all`'s routings; returns the experts' output for
/// them (`g` of each row, `layout.rows` rows) and the real rows received.
fn check_dispatch(
    shmem: &Shmem,
    bufs: &MoeBuffers,
    layout: &MoeLayout,
    all: &[Routing],
    round: u64,
) -> Result<(Vec<bf16>, usize), rshmem::BoxError> {
    let me = shmem.my_pe();
    let cfg = bufs.config();
    let (k, h, align) = (cfg.top_k as usize, cfg.hidden as usize, cfg.align as usize);
    let want = expected_rows(&cfg, all, me);
    let local = want.len();
    let ctx = |what: &str| format!("PE {me} round {round}: {what}");
    assert_eq!(layout.tokens as usize, all[me].tokens, "{}", ctx("tokens"));
    assert_eq!(layout.expert_rows.len(), local);
    let mut offset = 0usize;
    let mut received = std::collections::BTreeSet::new();
    for (j, rows) in want.iter().enumerate() {
        assert_eq!(
            layout.expert_offsets[j] as usize,
            offset,
            "{}",
            ctx(&format!("expert {j}'s offset"))
        );
        assert_eq!(
            layout.expert_rows[j] as usize,
            rows.len(),
            "{}",
            ctx(&format!("expert {j}'s rows"))
        );
        offset += rows.len().next_multiple_of(align);
        received.extend(rows.iter().map(|&(s, t, _)| (s, t)));
    }
    assert_eq!(layout.rows as usize, offset, "{}", ctx("rows in all"));
    assert_eq!(
        layout.tokens_received as usize,
        received.len(),
        "{}",
        ctx("tokens received")
    );
    let sr = scales_per_row(&cfg);
    let (recv_x, recv_scales): (Vec<u8>, Vec<f32>) = match cfg.payload {
        MoePayload::Bf16 => (
            bytemuck::cast_slice(&bufs.recv_x()?.to_vec()?).to_vec(),
            Vec::new(),
        ),
        MoePayload::Fp8E4m3 => {
            let (x, scales) = bufs.recv_x_fp8()?;
            (x.to_vec()?, scales.to_vec()?)
        }
    };
    let db = recv_x.len() / bufs.capacity();
    // The FP8 grouped GEMM's layout for A over all the rows: K block `kb` of row `r` at
    // `kb × capacity + r`.
    let scales_of = |row: usize| -> Vec<f32> {
        (0..sr)
            .map(|kb| recv_scales[kb * bufs.capacity() + row])
            .collect()
    };
    assert_eq!(
        db,
        h * if cfg.payload == MoePayload::Bf16 {
            2
        } else {
            1
        }
    );
    let (recv_src, recv_w) = (bufs.recv_src().to_vec()?, bufs.recv_weights().to_vec()?);
    let mut expert_out = vec![bf16::ZERO; offset * h];
    for (j, rows) in want.iter().enumerate() {
        let base = layout.expert_offsets[j] as usize;
        for (i, &(s, t, kk)) in rows.iter().enumerate() {
            let row = base + i;
            let src = &all[s];
            let got = &recv_x[row * db..(row + 1) * db];
            if got != row_bytes(&cfg, src, t) {
                let whose: Vec<(usize, usize)> = all
                    .iter()
                    .enumerate()
                    .flat_map(|(s2, r2)| (0..r2.tokens).map(move |t2| (s2, t2)))
                    .filter(|&(s2, t2)| row_bytes(&cfg, &all[s2], t2) == got)
                    .collect();
                panic!(
                    "{}: the row holds the data of {whose:?} (rank, token); its source says {:?}",
                    ctx(&format!(
                        "expert {j} row {i}: not the data of rank {s}'s token {t}"
                    )),
                    (recv_src[2 * row], recv_src[2 * row + 1])
                );
            }
            assert_eq!(
                scales_of(row),
                &src.scales[t * sr..(t + 1) * sr],
                "{}",
                ctx(&format!("expert {j} row {i}'s scales"))
            );
            assert_eq!(
                (recv_src[2 * row], recv_src[2 * row + 1]),
                (s as u32, t as u32),
                "{}",
                ctx(&format!("expert {j} row {i}'s source"))
            );
            assert_eq!(
                recv_w[row],
                src.weights[t * k + kk],
                "{}",
                ctx(&format!("expert {j} row {i}'s weight"))
            );
            for e in 0..h {
                expert_out[row * h + e] = g(element(&cfg, src, t, e), j as u32);
            }
        }
        for row in base + rows.len()..base + rows.len().next_multiple_of(align) {
            assert!(
                recv_x[row * db..(row + 1) * db].iter().all(|&v| v == 0)
                    && scales_of(row).iter().all(|&v| v == 0.0),
                "{}",
                ctx("padding")
            );
            assert_eq!(
                (recv_src[2 * row], recv_w[row]),
                (u32::MAX, 0.0),
                "{}",
                ctx("padding's source")
            );
        }
    }
    Ok((expert_out, offset))
}
