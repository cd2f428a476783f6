//! The low-latency MoE mode (`Ops::moe_ll_dispatch`, `moe_ll_combine`) on every backend,
//! against host references of fresh random routings (`moe_cases/mod.rs`, `run_ll`): random
//! routings with `-1` entries on 2-4 PEs over several calls on the same buffers; top-8 with
//! token counts 0, 1 and odd; a dispatch and a combine recorded into two graphs and launched
//! 50 times on new routings; an entry that is no expert (skipped and reported); the errors.

#[macro_use]
#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "moe_cases/mod.rs"]
mod moe_cases;

use common::Outcome;
use moe_cases::{Case, Draw};
use rshmem::{bf16, Shmem, Team};
use rshmem_ops::{MoeConfig, MoePayload, Ops};

per_backend! {
    random_routings => [2, 3, 4];
    top8_odd_token_counts => [2, 3];
    recorded_graphs_launched_50_times => [2];
    bad_entries_are_skipped => [2];
    errors => [2];
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

fn random_routings(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(4 * n, 2, 72, 24),
        tokens: |pe, _| [24, 7, 0, 13][pe % 4],
        draw: Draw::Random { none_in: 5 },
    };
    moe_cases::run_ll(shmem, &ops, &case, 3, false, false)
}

fn top8_odd_token_counts(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(8 * n, 8, 40, 17),
        tokens: |pe, _| [17, 1, 0][pe % 3],
        draw: Draw::Random { none_in: 9 },
    };
    moe_cases::run_ll(shmem, &ops, &case, 2, false, false)
}

fn recorded_graphs_launched_50_times(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(2 * n, 2, 16, 6),
        tokens: |pe, _| 6 - pe,
        draw: Draw::Random { none_in: 4 },
    };
    moe_cases::run_ll(shmem, &ops, &case, 50, true, false)
}

fn bad_entries_are_skipped(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let n = shmem.n_pes() as u32;
    let case = Case {
        config: config(3 * n, 3, 24, 11),
        tokens: |_, _| 11,
        draw: Draw::Random { none_in: 6 },
    };
    moe_cases::run_ll(shmem, &ops, &case, 2, false, true)
}

fn errors(shmem: &Shmem) -> Outcome {
    let ops = Ops::new(shmem)?;
    let stream = shmem.stream();
    let n = shmem.n_pes() as u32;
    let refused = |e: rshmem::Error, says: &str| {
        let msg = e.to_string();
        assert!(msg.contains(says), "expected `{says}` in: {msg}");
    };
    let fp8 = MoeConfig {
        payload: MoePayload::Fp8E4m3,
        ..config(2 * n, 2, 16, 8)
    };
    refused(
        ops.moe_ll_buffers(Team::WORLD, fp8).err().unwrap(),
        "bf16 rows",
    );
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
