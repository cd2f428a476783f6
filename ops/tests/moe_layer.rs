//! The fused MoE layer (`Ops::moe_layer`: dispatch → gate/up GEMM + SwiGLU → down GEMM →
//! combine, kernels only) on every backend, each stage of every call checked against an f64
//! reference of fresh random routings and weights (`moe_cases/layer.rs`): random routings
//! with `-1` entries on 2-4 PEs over several calls on one buffer set; top-k 1, 3 and 8 with
//! token counts 0, 1 and odd; every token to one expert (the others get none, and one
//! rank's rows for it span several of the send's pieces); hidden sizes
//! that are multiples of 8 but not of 16 or 128; one call recorded into a graph (as the
//! buffers' first call) and launched on new routings, eager calls between (one call counter);
//! an entry that is no expert, and an expert listed twice (skipped and reported); bad input
//! refused before anything is queued; PEs that disagree on the shape (an error, not a hang);
//! a team of 9 PEs (the rows for the ninth go through the push).

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "moe_cases/mod.rs"]
mod moe_cases;

use common::Outcome;
use moe_cases::layer::{run_layer, LayerCase, Run};
use moe_cases::Draw;
use rshmem::{bf16, Shmem, Team};
use rshmem_ops::{MoeLayerConfig, Ops};

per_backend! {
    random_routings => [2, 3, 4];
    top_k_1_3_8_odd_token_counts => [2];
    more_experts_than_a_warp => [2];
    every_token_to_one_expert => [3];
    graph_launched_on_new_routings => [2];
    bad_entries_are_skipped => [2];
    an_expert_listed_twice => [2];
    bad_input_is_refused => [2];
    mismatched_shapes_are_an_error_not_a_hang => [2, 3];
    a_team_past_the_peer_table => [9];
}

fn config(
    experts: u32,
    top_k: u32,
    hidden: u32,
    intermediate: u32,
    max_tokens: u32,
) -> MoeLayerConfig {
    MoeLayerConfig {
        experts,
        top_k,
        hidden,
        intermediate,
        max_tokens,
    }
}

fn eager(rounds: u64) -> Run {
    Run {
        rounds,
        ..Run::default()
    }
}

fn random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = LayerCase {
        config: config(2 * n, 2, 136, 24, 13),
        tokens: |pe, _| [13, 7, 0, 11][pe % 4],
        draw: Draw::Random { none_in: 5 },
    };
    run_layer(shmem, &ops, &case, eager(2))
}

fn top_k_1_3_8_odd_token_counts(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    for (top_k, experts, hidden, inter) in [(1, n, 72, 16), (3, 3 * n, 40, 8), (8, 4 * n, 8, 40)] {
        let case = LayerCase {
            config: config(experts, top_k, hidden, inter, 9),
            tokens: |pe, _| [9, 1, 0][pe % 3],
            draw: Draw::Random { none_in: 7 },
        };
        run_layer(shmem, &ops, &case, eager(1))?;
    }
    Ok(())
}

/// 70 experts over the team, most of them empty: the send finds a piece's expert 32 experts at
/// a time (`rshmem_moe::walk`), so pieces of experts past 32 are found in later windows.
fn more_experts_than_a_warp(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = LayerCase {
        config: config(35 * n, 8, 8, 8, 9),
        tokens: |pe, _| [9, 5][pe % 2],
        draw: Draw::Random { none_in: 9 },
    };
    run_layer(shmem, &ops, &case, eager(1))
}

/// Every token to the last expert (the others get none), then only rank 0's experts (the
/// other ranks receive nothing). The last expert gets 156 rows: two tiles of the gate/up GEMM,
/// the second waiting for one rank only; a rank's rows for it span several of the send's
/// pieces (`SEND_ROWS` rows), the last one's block signalling.
fn every_token_to_one_expert(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    for draw in [Draw::ToLast, Draw::OnlyRank0] {
        let case = LayerCase {
            config: config(2 * n, 2, 24, 16, 60),
            tokens: |pe, _| [60, 45, 51][pe % 3],
            draw,
        };
        run_layer(shmem, &ops, &case, eager(1))?;
    }
    Ok(())
}

fn graph_launched_on_new_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = LayerCase {
        config: config(2 * n, 2, 16, 8, 6),
        tokens: |pe, _| 6 - pe,
        draw: Draw::Random { none_in: 4 },
    };
    // 50 launches on GPUs; 10 on the simulator (about 2 s of a 2-core machine's time each).
    let launches = if shmem.backend() == rshmem::Backend::Gpu {
        50
    } else {
        10
    };
    let run = Run {
        graph: true,
        ..eager(launches)
    };
    run_layer(shmem, &ops, &case, run)
}

fn bad_entries_are_skipped(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = LayerCase {
        config: config(3 * n, 3, 24, 8, 5),
        tokens: |_, _| 5,
        draw: Draw::Random { none_in: 6 },
    };
    let run = Run {
        bad_entry: true,
        ..eager(1)
    };
    run_layer(shmem, &ops, &case, run)
}

/// Every token lists expert 0 twice: each rank's entries for it past `max_tokens` are
/// skipped (the expert's rows hold `max_tokens` per rank), reported, and add nothing.
fn an_expert_listed_twice(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = LayerCase {
        config: config(2 * n, 3, 16, 8, 7),
        tokens: |pe, _| [7, 3][pe % 2],
        draw: Draw::Twice,
    };
    run_layer(shmem, &ops, &case, eager(1))
}

/// Each bad argument is refused with a message naming it, before anything is queued: the
/// good call after them runs as the buffers' first (its every token is checked).
fn bad_input_is_refused(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let n = shmem.n_pes() as u32;
    let refused = |e: rshmem::Error, says: &str| {
        let msg = e.to_string();
        assert!(msg.contains(says), "expected `{says}` in: {msg}");
    };
    let shape = |hidden, intermediate, experts| config(experts, 2, hidden, intermediate, 8);
    for (cfg, says) in [
        (
            shape(20, 8, 2 * n),
            "hidden = 20, intermediate = 8: each must be a positive multiple of 8",
        ),
        (shape(16, 12, 2 * n), "intermediate = 12"),
        (shape(16, 0, 2 * n), "intermediate = 0"),
        (
            shape(16, 8, 2 * n + 1),
            "must be a positive multiple of the team's size",
        ),
    ] {
        refused(ops.moe_layer_buffers(Team::WORLD, cfg).err().unwrap(), says);
    }
    let cfg = shape(16, 8, 2 * n);
    let mut bufs = ops.moe_layer_buffers(Team::WORLD, cfg)?;
    let other = ops.moe_layer_buffers(Team::WORLD, cfg)?;
    // Local experts: 2. W₁ 2 x 16 x 16, W₂ 2 x 16 x 8.
    let w1 = shmem.alloc_from(&vec![bf16::from_f32(0.125); 2 * 16 * 16 + 8])?;
    let w2 = shmem.alloc_from(&vec![bf16::from_f32(0.25); 2 * 16 * 8])?;
    refused(
        ops.moe_layer_weights(&bufs, w1.range(..100)?, &w2)
            .err()
            .unwrap(),
        "`gate_up` holds 100 elements, but 2 local experts of hidden 16, intermediate 8 need 512",
    );
    refused(
        ops.moe_layer_weights(&bufs, w1.range(3..)?, &w2)
            .err()
            .unwrap(),
        "`gate_up` starts at an address that is not 16-byte aligned",
    );
    let weights = ops.moe_layer_weights(&bufs, &w1, &w2)?;
    let foreign = ops.moe_layer_weights(&other, &w1, &w2)?;
    let x = shmem.alloc_from(&vec![bf16::from_f32(0.5); 8 * 16])?;
    let topk = shmem.alloc_from(
        &(0..16)
            .map(|i| (i % (2 * n as i32 + 1)) - 1)
            .collect::<Vec<i32>>(),
    )?;
    let tw = shmem.alloc_from(&[0.5f32; 16])?;
    let mut out = shmem.alloc_from(&vec![bf16::from_f32(-7.0); 8 * 16])?;
    refused(
        ops.moe_layer(&stream, &mut bufs, &weights, &x, &topk, &tw, &mut out, 9)
            .err()
            .unwrap(),
        "9 tokens, more than the buffers' max_tokens = 8",
    );
    refused(
        ops.moe_layer(
            &stream,
            &mut bufs,
            &weights,
            x.range(..100)?,
            &topk,
            &tw,
            &mut out,
            8,
        )
        .err()
        .unwrap(),
        "`x` holds 100 elements, but 8 tokens need 128",
    );
    refused(
        ops.moe_layer(&stream, &mut bufs, &foreign, &x, &topk, &tw, &mut out, 8)
            .err()
            .unwrap(),
        "the weights were bound to another MoeLayerBuffers",
    );
    refused(
        ops.moe_layer(
            &stream,
            &mut bufs,
            &weights,
            &x,
            topk.range(..3)?,
            &tw,
            &mut out,
            8,
        )
        .err()
        .unwrap(),
        "`topk_idx` holds 3 elements, but 8 tokens need 16",
    );
    refused(
        ops.moe_layer(
            &stream,
            &mut bufs,
            &weights,
            &x,
            &topk,
            &tw,
            out.range_mut(..5)?,
            8,
        )
        .err()
        .unwrap(),
        "`out` holds 5 elements, but 8 tokens need 128",
    );
    drop(foreign);
    drop(other);
    // Nothing was queued: the first good call is the buffers' first (epoch 1), checked.
    ops.moe_layer(&stream, &mut bufs, &weights, &x, &topk, &tw, &mut out, 8)?;
    let got = out.to_vec()?;
    // Every element: Σ over valid entries of 0.5 × (hidden-16 down of 8 SwiGLU'd values).
    let g: f64 = 16.0 * 0.5 * 0.125; // gate = up = 1
    let a = bf16::from_f64(g / (1.0 + (-g).exp()) * g).to_f64();
    let y = bf16::from_f64(8.0 * a * 0.25).to_f64();
    let topk = topk.to_vec()?;
    for t in 0..8 {
        let valid = (0..2).filter(|&kk| topk[t * 2 + kk] >= 0).count() as f64;
        let want = 0.5 * y * valid;
        for c in 0..16 {
            let v = got[t * 16 + c].to_f64();
            assert!(
                (v - want).abs() <= want / 256.0,
                "out[{t}][{c}] = {v}, want {want}"
            );
        }
    }
    shmem.barrier_all()?;
    Ok(())
}

/// PEs that disagree on the layer's shape get an error from the buffers' symmetric
/// allocation, every one of them, instead of a call that waits for ever.
fn mismatched_shapes_are_an_error_not_a_hang(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let (me, n) = (shmem.my_pe() as u32, shmem.n_pes() as u32);
    for cfg in [
        config(2 * n, 2, 16, 8 + 8 * me, 8),
        config(2 * n, 2, 16 + 8 * me, 8, 8),
    ] {
        let e = ops
            .moe_layer_buffers(Team::WORLD, cfg)
            .err()
            .expect("PEs disagree on the shape");
        assert!(
            matches!(e, rshmem::Error::AsymmetricAlloc { .. }),
            "PE {me}: {e}"
        );
    }
    Ok(())
}

/// 9 PEs, one more than the down GEMM's table of mapped ranks: rows for rank 8 are kept in
/// `recv_x` and put after the GEMM (`MoeLayerBuffers::puts_to`), the others stored directly.
fn a_team_past_the_peer_table(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = LayerCase {
        config: config(n, 2, 16, 8, 5),
        tokens: |pe, _| 5 - pe % 3,
        draw: Draw::Random { none_in: 6 },
    };
    run_layer(shmem, &ops, &case, eager(1))
}
