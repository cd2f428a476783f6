//! Mixture-of-experts dispatch and combine (`Ops::moe_dispatch`, `Ops::moe_combine`) on every
//! backend, against host references of fresh random routings (`moe_cases/mod.rs`: what is
//! compared exactly and what within which bound): random routings with `-1` entries over
//! 2-4 PEs and several calls on the same buffers; top-k 1, 3 and 8 with hidden sizes that
//! are multiples of 8 and not of 16; token counts 0, 1 and odd; every token to one expert
//! (the other experts get nothing); only rank 0's experts (the other ranks receive nothing);
//! and the errors. `moe_no_p2p.rs` runs the cases on the simulator without peer mappings.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "moe_cases/mod.rs"]
mod moe_cases;

use common::Outcome;
use moe_cases::{Case, Draw, Experts};
use rshmem::{bf16, Shmem, Team};
use rshmem_ops::{MoeConfig, MoePayload, Ops};

per_backend! {
    random_routings => [2, 3, 4];
    many_tokens_route_over_blocks => [2, 3];
    top_k_one_to_eight => [2, 3];
    top_k_past_eight_ragged_hidden => [2, 3];
    every_token_to_one_expert => [2, 3];
    only_rank0_receives => [3];
    fp8_rows_and_scales => [2, 3];
    fp8_rows_through_the_grouped_gemm => [2, 3];
    bad_input_is_refused => [2];
    mismatched_shapes_are_an_error_not_a_hang => [2, 3];
}

fn random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: MoeConfig {
            experts: 4 * n,
            top_k: 2,
            hidden: 72,
            max_tokens: 40,
            align: 8,
            payload: MoePayload::Bf16,
        },
        tokens: |pe, _| [13, 0, 1, 40][pe % 4],
        draw: Draw::Random { none_in: 5 },
    };
    moe_cases::run(shmem, &ops, &case, 3)
}

/// Enough entries for a routing grid of several blocks (`rshmem_moe::route::blocks`: one per
/// 1024 entries), a block boundary inside a warp's run of tokens, and PEs with one block, a
/// partial one, and none: the numbering must stay in token and entry order across blocks.
fn many_tokens_route_over_blocks(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: MoeConfig {
            experts: 6 * n,
            top_k: 3,
            hidden: 8,
            max_tokens: 700,
            align: 4,
            payload: MoePayload::Bf16,
        },
        tokens: |pe, _| [700, 257, 0][pe % 3],
        draw: Draw::Random { none_in: 5 },
    };
    assert_eq!(rshmem_moe::route::blocks(700, 3), 3);
    moe_cases::run(shmem, &ops, &case, 2)
}

fn top_k_one_to_eight(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    for (top_k, align) in [(1, 1), (3, 16), (8, 4)] {
        let case = Case {
            config: MoeConfig {
                experts: 8 * n,
                top_k,
                hidden: 136,
                max_tokens: 33,
                align,
                payload: MoePayload::Bf16,
            },
            tokens: |pe, _| 17 + 5 * pe,
            draw: Draw::Random { none_in: 7 },
        };
        moe_cases::run(shmem, &ops, &case, 2)?;
    }
    Ok(())
}

/// Twelve entries per token (the kernels take them eight at a time) and rows of 36 elements
/// (not whole 16-byte packs: the element-wise tails of the scatter and the combine).
fn top_k_past_eight_ragged_hidden(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: MoeConfig {
            experts: 8 * n,
            top_k: 12,
            hidden: 36,
            max_tokens: 21,
            align: 3,
            payload: MoePayload::Bf16,
        },
        tokens: |pe, _| [21, 6, 0][pe % 3],
        draw: Draw::Random { none_in: 5 },
    };
    moe_cases::run(shmem, &ops, &case, 2)
}

fn every_token_to_one_expert(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: MoeConfig {
            experts: 2 * n,
            top_k: 4,
            hidden: 8,
            max_tokens: 25,
            align: 2,
            payload: MoePayload::Bf16,
        },
        tokens: |pe, _| 25 - pe,
        draw: Draw::ToLast,
    };
    moe_cases::run(shmem, &ops, &case, 2)
}

fn only_rank0_receives(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let case = Case {
        config: MoeConfig {
            experts: 12,
            top_k: 3,
            hidden: 40,
            max_tokens: 19,
            align: 4,
            payload: MoePayload::Bf16,
        },
        tokens: |pe, _| [19, 5, 0][pe % 3],
        draw: Draw::OnlyRank0,
    };
    moe_cases::run(shmem, &ops, &case, 2)
}

fn fp8_rows_and_scales(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    // 264 elements: three scales per row, the last over 8 elements.
    let case = Case {
        config: MoeConfig {
            experts: 4 * n,
            top_k: 4,
            hidden: 264,
            max_tokens: 23,
            align: 8,
            payload: MoePayload::Fp8E4m3,
        },
        tokens: |pe, _| [23, 1, 0][pe % 3],
        draw: Draw::Random { none_in: 6 },
    };
    moe_cases::run(shmem, &ops, &case, 2)
}

fn fp8_rows_through_the_grouped_gemm(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    // hidden 144: K a multiple of 16 (the FP8 GEMM's), not of 128 (A's second scale block
    // and B's second row and column of blocks are partial); padding rows inside the groups.
    let random = Case {
        config: MoeConfig {
            experts: 2 * n,
            top_k: 3,
            hidden: 144,
            max_tokens: 9,
            align: 8,
            payload: MoePayload::Fp8E4m3,
        },
        tokens: |pe, _| [9, 4, 0][pe % 3],
        draw: Draw::Random { none_in: 6 },
    };
    moe_cases::run_with(shmem, &ops, &random, 2, Experts::Fp8Gemm)?;
    // Every token to the last expert: one group holds every row, the others none.
    let one = Case {
        draw: Draw::ToLast,
        ..random
    };
    moe_cases::run_with(shmem, &ops, &one, 1, Experts::Fp8Gemm)
}

fn bad_input_is_refused(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let n = shmem.n_pes() as u32;
    let refused = |e: rshmem::Error, says: &str| {
        let msg = e.to_string();
        assert!(msg.contains(says), "expected `{says}` in: {msg}");
    };
    let shape = |experts, top_k, hidden| MoeConfig {
        experts,
        top_k,
        hidden,
        max_tokens: 8,
        align: 4,
        payload: MoePayload::Bf16,
    };
    refused(
        ops.moe_buffers(Team::WORLD, shape(2 * n + 1, 2, 16))
            .err()
            .unwrap(),
        "multiple of the team's size",
    );
    refused(
        ops.moe_buffers(Team::WORLD, shape(2 * n, 0, 16))
            .err()
            .unwrap(),
        "top_k = 0",
    );
    refused(
        ops.moe_buffers(Team::WORLD, shape(2 * n, 2, 0))
            .err()
            .unwrap(),
        "hidden = 0",
    );
    let cfg = shape(2 * n, 2, 16);
    let mut bufs = ops.moe_buffers(Team::WORLD, cfg)?;
    let x = shmem.alloc_zeroed::<bf16>(8 * 16)?;
    let x8 = shmem.alloc_zeroed::<u8>(8 * 16)?;
    let mut topk = shmem.alloc_from(&[0i32; 16])?;
    let w = shmem.alloc_zeroed::<f32>(16)?;
    refused(
        ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, 9)
            .err()
            .unwrap(),
        "more than the buffers' max_tokens = 8",
    );
    refused(
        ops.moe_dispatch(&stream, &mut bufs, x.range(..100)?, &topk, &w, 8)
            .err()
            .unwrap(),
        "`x` holds 100 elements, but 8 tokens need 128",
    );
    // A bad expert on every PE: refused before anything is queued, everywhere alike.
    let mut bad = vec![0i32; 16];
    bad[5] = (2 * n) as i32;
    topk.copy_from_host(&bad)?;
    refused(
        ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, 8)
            .err()
            .unwrap(),
        &format!("topk_idx[2][1] = {} is not an expert (0..{})", 2 * n, 2 * n),
    );
    bad[5] = -2;
    topk.copy_from_host(&bad)?;
    refused(
        ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, 8)
            .err()
            .unwrap(),
        "topk_idx[2][1] = -2",
    );
    // The buffers still work, and the pairing of dispatch and combine is checked. Tokens to
    // every rank's experts (so every rank has rows).
    let spread: Vec<i32> = (0..16).map(|i| (i % (2 * n as usize)) as i32).collect();
    topk.copy_from_host(&spread)?;
    let layout = ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, 8)?;
    refused(
        ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, 8)
            .err()
            .unwrap(),
        "has not been combined yet",
    );
    let eo = shmem.alloc_zeroed::<bf16>(bufs.capacity() * 16)?;
    let mut out = shmem.alloc_zeroed::<bf16>(8 * 16)?;
    refused(
        ops.moe_combine(&stream, &mut bufs, &layout, eo.range(..1)?, &mut out)
            .err()
            .unwrap(),
        "`expert_out` holds 1 elements",
    );
    ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out)?;
    refused(
        ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out)
            .err()
            .unwrap(),
        "combined already",
    );
    let again = ops.moe_dispatch(&stream, &mut bufs, &x, &topk, &w, 8)?;
    refused(
        ops.moe_combine(&stream, &mut bufs, &layout, &eo, &mut out)
            .err()
            .unwrap(),
        "the layout is of dispatch 1",
    );
    ops.moe_combine(&stream, &mut bufs, &again, &eo, &mut out)?;
    // The other payload's calls and views are refused by name.
    refused(
        ops.moe_dispatch_fp8(&stream, &mut bufs, x8.range(..)?, &w, &topk, &w, 8)
            .err()
            .unwrap(),
        "made for Bf16 rows",
    );
    refused(bufs.recv_x_fp8().err().unwrap(), "made for Bf16 rows");
    let fp8 = MoeConfig {
        payload: MoePayload::Fp8E4m3,
        ..cfg
    };
    let mut bufs8 = ops.moe_buffers(Team::WORLD, fp8)?;
    refused(bufs8.recv_x().err().unwrap(), "made for Fp8E4m3 rows");
    refused(
        ops.moe_dispatch(&stream, &mut bufs8, &x, &topk, &w, 8)
            .err()
            .unwrap(),
        "made for Fp8E4m3 rows",
    );
    refused(
        ops.moe_dispatch_fp8(&stream, &mut bufs8, &x8, w.range(..1)?, &topk, &w, 2)
            .err()
            .unwrap(),
        "`x_scales` holds 1 elements, but 2 tokens need 2",
    );
    // Recorded into a graph: refused (the normal mode waits on the host).
    let graph = stream.capture(|| {
        let e = ops
            .moe_dispatch(&stream, &mut bufs, &x, &topk, &w, 8)
            .err()
            .unwrap();
        refused(e, "graph capture");
        Ok(())
    })?;
    drop(graph);
    out.to_vec()?;
    Ok(())
}

/// PEs that disagree on the layer's shape get an error from the buffers' symmetric
/// allocation, every one of them, instead of a dispatch that waits for ever.
fn mismatched_shapes_are_an_error_not_a_hang(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let (me, n) = (shmem.my_pe() as u32, shmem.n_pes() as u32);
    let cfg = MoeConfig {
        experts: 2 * n,
        top_k: 2,
        hidden: 16 + 8 * me,
        max_tokens: 8,
        align: 4,
        payload: MoePayload::Bf16,
    };
    let e = ops
        .moe_buffers(Team::WORLD, cfg)
        .err()
        .expect("PEs disagree on hidden");
    assert!(
        matches!(e, rshmem::Error::AsymmetricAlloc { .. }),
        "PE {me}: {e}"
    );
    let e = ops
        .moe_ll_buffers(Team::WORLD, cfg)
        .err()
        .expect("PEs disagree on hidden");
    assert!(
        matches!(e, rshmem::Error::AsymmetricAlloc { .. }),
        "PE {me}: {e}"
    );
    Ok(())
}
