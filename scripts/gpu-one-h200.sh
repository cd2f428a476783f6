#!/usr/bin/env bash
# One device call on the one-H200 machine (kind nvidia-h200): scripts/gpu-check.sh's parts in
# slices, each under its own time budget so that one slow slice (PEs sharing the GPU time-slice
# their spinning kernels) cannot eat the call, then one short table. Made here by
# scripts/gpu-prepare.sh (PACKAGES="rshmem rshmem-api-tests rshmem-ops" is enough for it, but for
# `teams` and the hopper tests of `fp8`, whose binaries rshmem-device-tests builds: without it
# those run nothing).
#
#   device run (carry .gpu): bash .gpu/scripts/gpu-one-h200.sh [SLICE...]
#
# SLICEs (default: all, in this order): graphs gemm fused coll moe overhead regress teams tp1
# examples collectives tp faults
# The PEs sharing the GPU run under MPS (gpu-check.sh starts it; GPU_SHARING=timeslice for
# NVSHMEM's limited mode without it): 2 to 4 PEs, every split-team case included.
# Each slice writes its logs under $OUT/<slice>/ (gpu-check.sh's logs.tar.gz) and its test lines
# to $OUT/<slice>/tests.txt.
set -uo pipefail
G=.gpu/scripts/gpu-check.sh
OUT=${OUT:-/tmp/rshmem-out}
SLICES=${*:-graphs gemm fused coll moe overhead regress teams tp1 examples collectives tp faults}
# Named only: latency1 latency2 latency4 (the collectives' same-GPU latency under MPS), moe_bench,
# queue (the symmetric queue beside a raw put, 2 PEs under MPS; queue_hang: the forced 64-CTA case),
# grouped (the grouped GEMM's tests and benchmark), splitk (split-K's tests and benchmark),
# fp8 (the FP8 GEMM's tests, the hopper tests' wgmma FP8 case, and its benchmark), fp8split
# (FP8 split-K's tests and decode rows), userk (raw launches of the stand-in user image),
# queue14k (the queue with 14 KiB elements beside the put), python (the Python package under
# torchrun), tiles (both sm90 tiles beside cuBLAS).
slice() { # name, budget seconds, env assignments..., -- parts...
    local name=$1 budget=$2; shift 2
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    [[ " $SLICES " == *" $name "* ]] || return 0
    mkdir -p "$OUT/$name"
    local t0=$SECONDS
    timeout -k 10 "$budget" env OUT="$OUT/$name" "${envs[@]}" bash $G "$@" >"$OUT/$name.txt" 2>&1
    echo "slice $name: rc=$? $((SECONDS - t0))s (budget ${budget}s)" | tee -a "$OUT/slices.txt"
}
slice graphs 70 BINS=test-graphs PER_TEST_TIMEOUT=40 -- tests
slice gemm 40 BINS='test-(gemm|streams)' TESTS='gemms_in_graphs|put_signal' PER_TEST_TIMEOUT=40 -- tests
slice fused 120 BINS=test-fused PER_TEST_TIMEOUT=60 -- tests
slice coll 200 BINS=test-coll TESTS='_[234]pe' PER_TEST_TIMEOUT=120 -- tests
# Mixture of experts: dispatch and combine, normal and low-latency (graphs), the fused layer,
# 2-4 PEs.
slice moe 300 BINS='test-moe(_ll|_layer)?' PER_TEST_TIMEOUT=90 -- tests
# The launch-overhead example (graphs PART): meaningful with one PE on one GPU.
slice overhead 60 -- graphs
# The API suites of the fixtures and examples images (regressions after merges).
slice regress 240 BINS='test-(basics|views|streams|queue|suite|graphs)' PER_TEST_TIMEOUT=60 -- tests
# Host-side team splits and NVSHMEM's collectives: refused time-sliced, run under MPS.
slice teams 150 BINS=test-teams PER_TEST_TIMEOUT=60 -- tests
# The fused ops on ONE PE at full shapes: the fused machinery's cost over the GEMM alone.
slice tp1 180 -- tp_1pe
# The gemm example checks 4096³ grouped GEMMs and 2048³ FP8 against f64 host references: every
# 8th row took over 140 s on an H100 (2026-12-05, killed before its FP8 pass); the references now
# sample about 2^29 multiply-adds per GEMM (every 128th row of a 4096³).
slice examples 240 -- examples
slice collectives 70 COLL_ARGS='--sizes 8,65536,1048576,4194304 --iters 5' COLL_TIMEOUT=60 -- collectives
# Under MPS: the small all-reduces' latency, 2 and 4 PEs (same-GPU numbers: the protocols' cost).
slice grouped 330 BINS=test-gemm TESTS=grouped PER_TEST_TIMEOUT=60 -- tests grouped_bench
slice splitk 300 BINS=test-gemm TESTS=split_k PER_TEST_TIMEOUT=60 -- tests splitk_bench
slice fp8 480 BINS='test-(gemm_fp8|hopper)' TESTS='_1pe' PER_TEST_TIMEOUT=90 -- tests fp8_bench
# FP8 split-K's tests (in test-gemm_fp8) and its decode rows, unsplit beside split.
slice fp8split 420 BINS=test-gemm_fp8 TESTS='split_k.*_1pe' PER_TEST_TIMEOUT=90 -- tests fp8_split_bench
# Kernels launched from an image the tests were not compiled with (launch_raw_on), 1-3 PEs.
slice userk 90 BINS=test-sim_library PER_TEST_TIMEOUT=40 -- tests
slice moe_bench 580 MOE_TIMEOUT=560 -- moe_bench
# One PE: the same kernels with no peer to wait for (the launch and kernel floor under the
# latencies of latency2/latency4).
LATENCY="COLL_ARGS=--ops all_reduce --sizes 8,4096,65536,262144,1048576,4194304 --no-baselines"
slice latency1 90 CB_NPES=1 "$LATENCY" COLL_TIMEOUT=80 -- collectives
slice latency2 120 CB_NPES=2 "$LATENCY" COLL_TIMEOUT=110 -- collectives
slice latency4 150 CB_NPES=4 "$LATENCY" COLL_TIMEOUT=140 -- collectives
slice tp 70 -- tp
# The symmetric queue under MPS (docs/queue.md): every kind beside the put of the same bytes at
# 1 to 33 CTAs per PE, the refusal of 64, then only the 1 KiB cooperative kinds and puts with
# more elements per warp (longer runs, steadier rates).
slice queue 300 -- queue_bench
slice queue1k 200 QB_ARGS='--sizes 1024 --kinds coop,put --items 16384' -- queue_bench
slice queue_hang 150 -- queue_bench_hang
# 14 KiB elements (a token row of hidden 7168 in bf16) beside the put of the same bytes: whether a
# queue-carried MoE dispatch is worth building (docs/queue.md, the design note's first measurement).
slice queue14k 240 QB_ARGS='--sizes 14336 --kinds coop,put --items 256 --capacity 1024 --ctas 1,8,32' -- queue_bench
# The Python package under torchrun (3 ranks under MPS: every op against torch, graphs, own
# kernels, a failing rank; then the benchmark with the per-call overhead against Rust).
slice python 330 PY_NPES=3 -- python
# Both sm90 tiles on ragged and square shapes beside cuBLAS (the tile model's data).
slice tiles 420 TILES_TIMEOUT=400 -- gemm_tiles
# faults: the fault suite (9 tests, 2 jobs each) and the GPU blame test (15 jobs on one GPU)
# take about 3-4 minutes with PEs sharing the GPU; run this slice on its own call.
slice faults 330 -- faults checked_bench
echo
echo "== tests (every slice)"
cat "$OUT"/*/tests.txt 2>/dev/null
echo "== steps"
grep -h -E '^=== [a-z0-9_]+: rc=' "$OUT"/*.txt 2>/dev/null | sort -u
cat "$OUT/slices.txt"
