//! The low-latency MoE mode (`Ops::moe_ll_dispatch`, `moe_ll_combine`) on every backend,
//! against host references of fresh random routings (`moe_cases/ll.rs`): random routings with
//! `-1` entries on 2-4 PEs over several calls on the same buffers; top-8 with token counts 0,
//! 1 and odd; a dispatch and a combine recorded into two graphs and launched 50 times on new
//! routings; an entry that is no expert (skipped and reported); the errors. FP8 rows
//! (`moe_ll_dispatch_fp8`; hidden sizes multiples of 8, not of 128, so the last scale block
//! is partial): random routings on 2-4 PEs, every token to one expert (the others empty),
//! graphs launched 50 times on GPUs (20 on the simulator), and the experts as one `Ops::grouped_gemm_fp8` over the received
//! rows and scales as they are, the combine checked against an f64 reference of the
//! dequantised rows.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "moe_cases/mod.rs"]
mod moe_cases;

use common::Outcome;
use moe_cases::ll::{Experts, Ll};
use moe_cases::{Case, Draw};
use rshmem::{bf16, Backend, Shmem, Team};
use rshmem_ops::{MoeConfig, MoePayload, Ops};

per_backend! {
    random_routings => [2, 3, 4];
    top8_odd_token_counts => [2, 3];
    more_local_experts_than_a_warp => [2];
    many_tokens_route_over_blocks => [2, 3];
    recorded_graphs_launched_50_times => [2];
    bad_entries_are_skipped => [2];
    errors => [2];
    fp8_random_routings => [2, 3, 4];
    fp8_every_token_to_one_expert => [2, 3];
    fp8_recorded_graphs_launched_many_times => [2];
    fp8_rows_through_the_grouped_gemm => [2, 3];
    fp8_errors => [2];
}

fn config(experts: u32, top_k: u32, hidden: u32, max_tokens: u32) -> MoeConfig {
    MoeConfig {
        experts,
        top_k,
        hidden,
        max_tokens,
        align: 1,
        payload: MoePayload::Bf16,
    }
}

fn fp8(experts: u32, top_k: u32, hidden: u32, max_tokens: u32) -> MoeConfig {
    MoeConfig {
        payload: MoePayload::Fp8E4m3,
        ..config(experts, top_k, hidden, max_tokens)
    }
}

fn random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(4 * n, 2, 72, 24),
        tokens: |pe, _| [24, 7, 0, 13][pe % 4],
        draw: Draw::Random { none_in: 5 },
    };
    moe_cases::ll::run(shmem, &ops, &case, Ll::rounds(3))
}

fn top8_odd_token_counts(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(8 * n, 8, 40, 17),
        tokens: |pe, _| [17, 1, 0][pe % 3],
        draw: Draw::Random { none_in: 9 },
    };
    moe_cases::ll::run(shmem, &ops, &case, Ll::rounds(2))
}

/// 34 local experts, most of them empty: the combine's sends find a row's expert 32 experts at
/// a time (`rshmem_moe::walk`), so a row of expert 32 or 33 is found in a second window.
fn more_local_experts_than_a_warp(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(34 * n, 8, 8, 9),
        tokens: |pe, _| [9, 4][pe % 2],
        draw: Draw::Random { none_in: 9 },
    };
    moe_cases::ll::run(shmem, &ops, &case, Ll::rounds(2))
}

/// A routing grid of several blocks (one per 1024 entries: `rshmem_moe::route::blocks`), in
/// a recorded graph too, and with a bad entry (skipped and reported, the other blocks' entries
/// numbered as ever).
fn many_tokens_route_over_blocks(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(4 * n, 4, 8, 520),
        tokens: |pe, _| [520, 300, 0][pe % 3],
        draw: Draw::Random { none_in: 5 },
    };
    assert_eq!(rshmem_moe::route::blocks(520, 4), 3);
    let graphs = Ll {
        graphs: true,
        ..Ll::rounds(2)
    };
    moe_cases::ll::run(shmem, &ops, &case, graphs)?;
    let bad = Ll {
        bad: true,
        ..Ll::rounds(1)
    };
    moe_cases::ll::run(shmem, &ops, &case, bad)
}

fn recorded_graphs_launched_50_times(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(2 * n, 2, 16, 6),
        tokens: |pe, _| 6 - pe,
        draw: Draw::Random { none_in: 4 },
    };
    let how = Ll {
        graphs: true,
        ..Ll::rounds(50)
    };
    moe_cases::ll::run(shmem, &ops, &case, how)
}

fn bad_entries_are_skipped(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(3 * n, 3, 24, 11),
        tokens: |_, _| 11,
        draw: Draw::Random { none_in: 6 },
    };
    let how = Ll {
        bad: true,
        ..Ll::rounds(2)
    };
    moe_cases::ll::run(shmem, &ops, &case, how)
}

fn errors(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let n = shmem.n_pes() as u32;
    let refused = |e: rshmem::Error, says: &str| {
        let msg = e.to_string();
        assert!(msg.contains(says), "expected `{says}` in: {msg}");
    };
    let mut ll = ops.moe_ll_buffers(Team::WORLD, config(2 * n, 2, 16, 8))?;
    let x = shmem.alloc_zeroed::<bf16>(8 * 16)?;
    let topk = shmem.alloc_from(&[-1i32; 16])?;
    let w = shmem.alloc_zeroed::<f32>(16)?;
    let eo = shmem.alloc_zeroed::<bf16>(2 * ll.rows_per_expert() * 16)?;
    let mut out = shmem.alloc_zeroed::<bf16>(8 * 16)?;
    refused(
        ops.moe_ll_dispatch(&stream, &mut ll, &x, &topk, 9)
            .err()
            .unwrap(),
        "max_tokens = 8",
    );
    refused(
        ops.moe_ll_dispatch(&stream, &mut ll, x.range(..10)?, &topk, 8)
            .err()
            .unwrap(),
        "`x` holds 10 elements, but 8 tokens need 128",
    );
    refused(
        ops.moe_ll_dispatch_recv(&stream, &mut ll).err().unwrap(),
        "wants a dispatch sent",
    );
    refused(
        ops.moe_ll_combine(&stream, &mut ll, &eo, &topk, &w, &mut out)
            .err()
            .unwrap(),
        "wants a dispatch received",
    );
    ops.moe_ll_dispatch_send(&stream, &mut ll, &x, &topk, 8)?;
    refused(
        ops.moe_ll_dispatch_send(&stream, &mut ll, &x, &topk, 8)
            .err()
            .unwrap(),
        "the previous dispatch combined",
    );
    ops.moe_ll_dispatch_recv(&stream, &mut ll)?;
    refused(
        ops.moe_ll_combine(&stream, &mut ll, eo.range(..5)?, &topk, &w, &mut out)
            .err()
            .unwrap(),
        "`expert_out` holds 5 elements",
    );
    ops.moe_ll_combine(&stream, &mut ll, &eo, &topk, &w, &mut out)?;
    // Every entry was -1: nothing received, every token zero.
    assert!(ll.recv_count().to_vec()?.iter().all(|&c| c == 0));
    assert!(out.to_vec()?.iter().all(|&v| v == bf16::ZERO));
    Ok(())
}

fn fp8_random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    // 264 elements: three scales per row, the last over 8 elements.
    let case = Case {
        config: fp8(3 * n, 4, 264, 13),
        tokens: |pe, _| [13, 0, 1, 6][pe % 4],
        draw: Draw::Random { none_in: 5 },
    };
    moe_cases::ll::run(shmem, &ops, &case, Ll::rounds(2))
}

fn fp8_every_token_to_one_expert(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: fp8(2 * n, 3, 136, 9),
        tokens: |pe, _| 9 - 2 * pe,
        draw: Draw::ToLast,
    };
    moe_cases::ll::run(shmem, &ops, &case, Ll::rounds(2))
}

fn fp8_recorded_graphs_launched_many_times(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: fp8(2 * n, 2, 136, 5),
        tokens: |pe, _| 5 - pe,
        draw: Draw::Random { none_in: 4 },
    };
    // 50 launches on GPUs; 20 on the simulator, where each costs most of a second of CI (the
    // bf16 graphs' 50 launches cover the recording itself).
    let launches = match shmem.backend() {
        Backend::Sim => 20,
        Backend::Gpu => 50,
    };
    let how = Ll {
        graphs: true,
        ..Ll::rounds(launches)
    };
    moe_cases::ll::run(shmem, &ops, &case, how)
}

fn fp8_rows_through_the_grouped_gemm(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    // hidden 144: K a multiple of 16 (the FP8 GEMM's), not of 128 (A's second scale block
    // and B's second row and column of blocks are partial).
    let random = Case {
        config: fp8(2 * n, 3, 144, 7),
        tokens: |pe, _| [7, 3, 0][pe % 3],
        draw: Draw::Random { none_in: 6 },
    };
    let gemm = Ll {
        experts: Experts::Fp8Gemm,
        ..Ll::rounds(2)
    };
    moe_cases::ll::run(shmem, &ops, &random, gemm)?;
    // Every token to the last expert: one group holds every row, the others none.
    let one = Case {
        draw: Draw::ToLast,
        ..random
    };
    moe_cases::ll::run(shmem, &ops, &one, Ll { rounds: 1, ..gemm })
}

fn fp8_errors(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let n = shmem.n_pes() as u32;
    let refused = |e: rshmem::Error, says: &str| {
        let msg = e.to_string();
        assert!(msg.contains(says), "expected `{says}` in: {msg}");
    };
    // 136 elements: two scales per row.
    let mut ll8 = ops.moe_ll_buffers(Team::WORLD, fp8(2 * n, 2, 136, 8))?;
    let mut ll16 = ops.moe_ll_buffers(Team::WORLD, config(2 * n, 2, 136, 8))?;
    let x16 = shmem.alloc_zeroed::<bf16>(8 * 136)?;
    let x8 = shmem.alloc_zeroed::<u8>(8 * 136)?;
    let scales = shmem.alloc_from(&[1.0f32; 16])?;
    let topk = shmem.alloc_from(&[-1i32; 16])?;
    let w = shmem.alloc_zeroed::<f32>(16)?;
    let eo = shmem.alloc_zeroed::<bf16>(2 * ll8.rows_per_expert() * 136)?;
    let mut out = shmem.alloc_zeroed::<bf16>(8 * 136)?;
    // The other payload's calls and views, both ways.
    refused(
        ops.moe_ll_dispatch(&stream, &mut ll8, &x16, &topk, 8)
            .err()
            .unwrap(),
        "Ops::moe_ll_dispatch_send: these buffers were made for Fp8E4m3 rows",
    );
    refused(
        ops.moe_ll_dispatch_fp8(&stream, &mut ll16, &x8, &scales, &topk, 8)
            .err()
            .unwrap(),
        "Ops::moe_ll_dispatch_send_fp8: these buffers were made for Bf16 rows",
    );
    refused(ll8.recv_x().err().unwrap(), "made for Fp8E4m3 rows");
    refused(ll16.recv_x_fp8().err().unwrap(), "made for Bf16 rows");
    // Short scales and rows.
    refused(
        ops.moe_ll_dispatch_fp8(&stream, &mut ll8, &x8, scales.range(..15)?, &topk, 8)
            .err()
            .unwrap(),
        "`x_scales` holds 15 elements, but 8 tokens need 16",
    );
    refused(
        ops.moe_ll_dispatch_send_fp8(&stream, &mut ll8, x8.range(..100)?, &scales, &topk, 8)
            .err()
            .unwrap(),
        "`x` holds 100 elements, but 8 tokens need 1088",
    );
    // Nothing was queued: a good call on each goes through, and the order is still checked.
    ops.moe_ll_dispatch_send_fp8(&stream, &mut ll8, &x8, &scales, &topk, 8)?;
    refused(
        ops.moe_ll_dispatch_fp8(&stream, &mut ll8, &x8, &scales, &topk, 8)
            .err()
            .unwrap(),
        "the previous dispatch combined",
    );
    ops.moe_ll_dispatch_recv(&stream, &mut ll8)?;
    ops.moe_ll_combine(&stream, &mut ll8, &eo, &topk, &w, &mut out)?;
    ops.moe_ll_dispatch(&stream, &mut ll16, &x16, &topk, 8)?;
    ops.moe_ll_combine(&stream, &mut ll16, &eo, &topk, &w, &mut out)?;
    assert!(ll8.recv_count().to_vec()?.iter().all(|&c| c == 0));
    assert!(out.to_vec()?.iter().all(|&v| v == bf16::ZERO));
    Ok(())
}
