#!/usr/bin/env bash
# Runs on the GPU machine (device tool, kind nvidia-h200-x2), from the repository root, with
# .gpu/ carried (made here by scripts/gpu-prepare.sh; nothing is built there but the CUDA C++
# peers, with nvcc). Correctness first, then performance side by side, then a short table.
#
#   device run: bash .gpu/scripts/gpu-check.sh [PART...]   (writes logs to $OUT)
#
# PARTs (default: all of them): `examples` (the seed's programs and the queue example),
# `tests` (every `gpu::` test of every carried test binary, one process per test with its own
# bound, so a hang costs one test, not the binary; TESTS=REGEX picks tests, BINS=REGEX binaries), `bandwidth` (Rust put bandwidth beside the
# CUDA C++ peer), `queue_bench` (2 GPUs, or 2 PEs sharing one under MPS; `queue_bench_hang`,
# named only, forces the case that hung there), `perftest` (every perftest row beside its CUDA C++ twin; one
# PE per GPU, RSHMEM_NPES of them, default all), and, only when named, `gemm_bench`
# (scripts/gemm_bench.py: rshmem's GEMM beside cuBLAS, N x K then K x N; `grouped_bench` and
# `splitk_bench` its grouped and split-K cases), `graphs` (launch overhead with and
# without CUDA graphs: examples/launch_overhead.rs on 1 and 2 PEs; the graph tests themselves are
# `BINS=test-graphs` of `tests`), `collectives` (examples/all_reduce, then
# scripts/collectives_bench.py: rshmem's collectives beside NCCL, torch symmetric memory and
# NVSHMEM, with and without graphs, plotted by scripts/plot_collectives.py; their `gpu::` tests are
# `BINS=test-coll` of `tests`, with PER_TEST_TIMEOUT=300 when PEs share one GPU) and `tp` (the
# fused tensor-parallel ops: the tp_mlp example, then scripts/tp_bench.py beside NCCL + cuBLAS and
# torch's fused ops; on one GPU 2 PEs share it, a smoke test) and `faults` (the fault suite and
# the GPU blame test of issue 12: `gpu::` tests of test-fault_suite and test-faults) and `python`
# (the Python package under torchrun: section 6, needs `PYTHON=1 scripts/gpu-prepare.sh`). Split the
# parts over several device calls to stay under the per-call limit.
set -uo pipefail
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export RSHMEM_BACKEND=gpu RUST_LIB_BACKTRACE=0
OUT=${OUT:-/tmp/rshmem-out}
mkdir -p "$OUT"
BIN=.gpu/bin
for packed in bin cubin kernels; do # gpu-prepare.sh's archives, unpacked once
    [ -d .gpu/$packed ] || [ ! -f .gpu/$packed.tar.xz ] ||
        python3 -c "import tarfile; tarfile.open('.gpu/$packed.tar.xz').extractall('.gpu')"
done
NVS=$(python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])")
export NVSHMEM_HOME=$NVS
export LD_LIBRARY_PATH=$NVS/lib:${LD_LIBRARY_PATH:-}
declare -A RESULT
PARTS=${*:-examples tests graphs bandwidth queue_bench perftest}
want() { [[ " $PARTS " == *" $1 "* ]]; }

step() { # name, command...: runs it with a 300 s bound, records pass/fail, keeps the log
    local name=$1; shift
    echo "=== $name: $*"
    local t0=$SECONDS
    timeout -k 10 "${STEP_TIMEOUT:-300}" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    tail -n 25 "$OUT/$name.log"
    RESULT[$name]="rc=$rc $((SECONDS - t0))s"
    echo "=== $name: rc=$rc"
}

nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
nvidia-smi topo -m | head -4
echo "NVSHMEM at $NVS"

NGPU=$(nvidia-smi -L | grep -c '^GPU')
# GPU_SHARING (one GPU only): `mps` (default) runs the PEs sharing it under MPS, in NVSHMEM's
# full multi-process mode (scripts/mps.sh starts the daemon and stops it at exit);
# `timeslice` without MPS (RSHMEM_GPU_OVERSUBSCRIBE=1: NVSHMEM's limited mode).
MPS=0
if [ "$NGPU" -lt 2 ]; then
    # One GPU: one PE per GPU, then 2 PEs sharing it to exercise the multi-PE paths; no
    # bandwidth comparison (it needs NVLink).
    # Nsight Compute refuses MPS clients: a profile alone runs without MPS.
    [ "$PARTS" = gemm_profile ] && : "${GPU_SHARING:=timeslice}"
    echo "only $NGPU GPU: smoke mode, PEs sharing it: ${GPU_SHARING:=mps}"
    step hello_1pe env RSHMEM_NPES=1 $BIN/hello_symmetric
    step ring_1pe env RSHMEM_NPES=1 $BIN/ring
    if [ "$GPU_SHARING" = mps ]; then
        source "$(dirname "$0")/mps.sh" && mps_start && MPS=1
    else
        export RSHMEM_GPU_OVERSUBSCRIBE=1
    fi
fi

# 1. The seed's programs, in Rust end to end, and the queue example (seed + pipeline), on
# every GPU (2 PEs sharing one GPU in smoke mode).
if want examples; then
    EX_NPES=$((NGPU >= 2 ? NGPU : 2))
    step hello_symmetric env RSHMEM_NPES=$EX_NPES $BIN/hello_symmetric
    step ring env RSHMEM_NPES=$EX_NPES $BIN/ring
    step symmetric_queue env RSHMEM_NPES=$EX_NPES $BIN/symmetric_queue
    step gemm env RSHMEM_NPES=1 $BIN/gemm
    step moe env RSHMEM_NPES=$EX_NPES $BIN/moe
    # The fused MoE layer, every stage checked (its timing is moe_bench's layer rows).
    step moe_layer env RSHMEM_NPES=$EX_NPES $BIN/moe_layer
    # The tensor-parallel MLP (fused ops); sharing one GPU, small sizes.
    if [ "$NGPU" -lt 2 ]; then
        step tp_mlp env RSHMEM_NPES=2 $BIN/tp_mlp --m 1024 --hidden 1024 --ffn 4096 --iters 3
    else
        step tp_mlp env RSHMEM_NPES=$NGPU $BIN/tp_mlp
    fi
fi
if want tp; then
    # The fused ops' SASS: HGMMA in the sm_90a fused kernels too.
    CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump | head -1)
    for cubin in .gpu/cubin/rshmem-ops-tp*.cubin; do
        "$CUOBJDUMP" -sass "$cubin" >"$OUT/$(basename "$cubin").sass" 2>&1
        echo "$(basename "$cubin"): $(grep -c HGMMA "$OUT/$(basename "$cubin").sass") HGMMA"
    done
    if [ "$NGPU" -lt 2 ]; then
        step tp_mlp_2pe env RSHMEM_NPES=2 $BIN/tp_mlp --m 2048 --hidden 2048 --ffn 8192 --iters 5
    else
        step tp_mlp_${NGPU}pe env RSHMEM_NPES=$NGPU $BIN/tp_mlp --m 8192 --hidden 8192 --ffn 28672
    fi
    STEP_TIMEOUT=580 step tp_bench python3 .gpu/scripts/tp_bench.py --bin $BIN/tp_bench
fi
# The fused ops with ONE PE (no communication: the all-gather is the PE's own shard, the
# reduce-scatter its own rows) at full shapes beside Ops::gemm alone: what the fused machinery
# (flags, hooks, tile order) costs on one GPU, the one fused-op timing one GPU can give.
if want tp_1pe; then
    STEP_TIMEOUT=280 step tp_bench_1pe python3 .gpu/scripts/tp_bench.py --bin $BIN/tp_bench --npes 1 \
        --shapes ag:8192x8192x8192,ag:8192x28672x8192,ag:4096x49152x12288,rs:8192x8192x8192,rs:8192x8192x28672,rs:4096x12288x49152
fi
if want gemm_bench; then
    # The GEMM images' SASS (cubins carried by gpu-prepare.sh): HGMMA in the sm_90a kernels.
    CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump | head -1)
    for cubin in .gpu/cubin/*.cubin; do
        "$CUOBJDUMP" -sass "$cubin" >"$OUT/$(basename "$cubin").sass" 2>&1
        echo "$(basename "$cubin"): $(grep -c HGMMA "$OUT/$(basename "$cubin").sass") HGMMA"
    done
    STEP_TIMEOUT=540 step gemm_bench python3 .gpu/scripts/gemm_bench.py --bin $BIN/gemm_bench
    STEP_TIMEOUT=540 step gemm_bench_kn python3 .gpu/scripts/gemm_bench.py --kn --bin $BIN/gemm_bench
    # The sm80 (mma.sync) kernel on the same H200: its speed is reported, no goal.
    STEP_TIMEOUT=300 step gemm_bench_sm80 python3 .gpu/scripts/gemm_bench.py --kernel sm80 \
        --shapes 8192x8192x8192,4096x4096x4096,2048x2048x2048 --bin $BIN/gemm_bench
fi
# Both sm90 tiles (128 x 256, 128 x 128) on every shape, each row with its own cuBLAS timing:
# the data ops/src/gemm/plan.rs's tile model is fitted to (docs/gemm.md, "Two tile shapes").
if want gemm_tiles; then
    STEP_TIMEOUT=${TILES_TIMEOUT:-400} step gemm_tiles python3 .gpu/scripts/gemm_bench.py --tile 256,128 \
        --shapes "${TILE_SHAPES:-8192x8192x8192,4096x14336x4096,2048x2048x2048,5000x1000x4096,4352x1024x4096,8192x1024x8192,1000x1000x4096,3000x3000x3000,2000x5000x2048,8192x2048x8192,6144x1536x4096}" \
        --bin $BIN/gemm_bench
fi
# The grouped GEMM beside torch._grouped_mm, a per-group loop and dense GEMMs of the same FLOPs.
if want grouped_bench; then
    STEP_TIMEOUT=300 step grouped_bench python3 .gpu/scripts/gemm_bench.py --grouped --bin $BIN/gemm_bench
fi
# FP8 (e4m3, bf16 out): per tensor beside torch._scaled_mm(use_fast_accum=True), block-scaled beside
# torch._scaled_mm's 1x128 x 128x128 scales where torch supports them, and the grouped block-scaled
# GEMM; each row checked against f32 torch on the dequantised operands first.
if want fp8_bench; then
    STEP_TIMEOUT=420 step fp8_bench python3 .gpu/scripts/gemm_bench.py --fp8 --bin $BIN/gemm_bench
fi
# Split-K at decode-sized M (and one large shape Auto must leave unsplit), off then auto per shape.
# FP8 split-K at decode-sized M (both scalings), off then auto per shape.
if want fp8_split_bench; then
    STEP_TIMEOUT=300 step fp8_split_bench python3 .gpu/scripts/gemm_bench.py --fp8 --split off,auto \
        --shapes 1x8192x8192,16x4096x4096,64x8192x8192,128x8192x8192,256x4096x14336 --bin $BIN/gemm_bench
fi
if want splitk_bench; then
    STEP_TIMEOUT=300 step splitk_bench python3 .gpu/scripts/gemm_bench.py --split off,auto \
        --shapes 16x4096x4096,64x4096x4096,16x8192x8192,64x8192x8192,128x8192x8192,32x7168x2048,128x4096x14336,4096x4096x4096 \
        --bin $BIN/gemm_bench
    STEP_TIMEOUT=120 step splitk_bench_kn python3 .gpu/scripts/gemm_bench.py --kn --split off,auto \
        --shapes 16x4096x4096,128x8192x8192 --bin $BIN/gemm_bench
fi
if want gemm_profile; then
    # Nsight Compute on one GEMM (PROFILE_SHAPE=MxNxK, default 8192x8192x8192; PROFILE_SPLIT, the
    # gemm_bench --split, default auto; PROFILE_FP8=tensor|block: the FP8 GEMM with those scales
    # beside torch._scaled_mm with the same scaling), rshmem's kernels and cuBLAS's (through
    # torch), the same counters for both: tensor-pipe, L2 and DRAM throughput, SM clock (clocks
    # left alone), and the warp-state and scheduler sections (where the issue slots go).
    # ncu skips rshmem's first two launches and profiles the next two: a split GEMM's parts and
    # reduce (of the warm-up call), or two plain GEMMs where K is not split.
    IFS=x read -r PM PN PK <<<"${PROFILE_SHAPE:-8192x8192x8192}"
    export PM PN PK PROFILE_FP8=${PROFILE_FP8:-} # the shape, for both Python scripts below
    mkdir -p /tmp/gp
    python3 - <<'PY'
import torch, ctypes, os
m, n, k = (int(os.environ[v]) for v in ("PM", "PN", "PK"))
fp8 = os.environ["PROFILE_FP8"]
def write(name, t):
    t = t.contiguous()
    open("/tmp/gp/%s.bin" % name, "wb").write(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))
for name, shape in (("a", (m, k)), ("b", (n, k))):
    t = torch.randn(*shape, dtype=torch.bfloat16)
    write(name, t.to(torch.float8_e4m3fn).view(torch.uint8) if fp8 else t)
if fp8 == "tensor":
    write("sa", torch.ones(1)); write("sb", torch.ones(1))
elif fp8 == "block":  # gemm_bench's layouts: A's ceil(k/128) x m, B's ceil(n/128) x ceil(k/128)
    write("sa", torch.rand(-(-k // 128), m) + 0.5); write("sb", torch.rand(-(-n // 128), -(-k // 128)) + 0.5)
PY
    cat >/tmp/gp/cublas.py <<'PY'
import torch, os
m, n, k = (int(os.environ[v]) for v in ("PM", "PN", "PK"))
fp8 = os.environ["PROFILE_FP8"]
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
if fp8:
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    if fp8 == "tensor":
        one = torch.ones((), device="cuda")
        mm = lambda: torch._scaled_mm(a8, b8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                      use_fast_accum=True)
    else:  # cuBLASLt's 1x128 and 128x128 layouts (gemm_bench.py's scaled_mm_fn)
        kb4 = -(-(k // 128) // 4) * 4
        sa = torch.rand(k // 128, m, device="cuda").t()
        sb = torch.rand(n // 128, kb4, device="cuda").t()[: k // 128]
        mm = lambda: torch._scaled_mm(a8, b8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
else:
    mm = lambda: a @ b.T
for _ in range(5):
    c = mm()
torch.cuda.synchronize()
PY
    METRICS=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,smsp__inst_executed.sum,lts__t_bytes.sum.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_read.sum.per_second,lts__t_sectors_srcunit_tex_op_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__cluster_dim_x,launch__registers_per_thread
    NCU="ncu --clock-control none --target-processes all --section WarpStateStats --section SchedulerStats --metrics $METRICS"
    FP8_ARGS=()
    [ -n "$PROFILE_FP8" ] && FP8_ARGS=(--fp8 "$PROFILE_FP8")
    STEP_TIMEOUT=200 step ncu_rshmem env NVSHMEM_SYMMETRIC_SIZE=2G RSHMEM_NPES=1 $NCU -k regex:'gemm90|splitk' --launch-skip 2 --launch-count 2 \
        $BIN/gemm_bench --dir /tmp/gp --m $PM --n $PN --k $PK --split "${PROFILE_SPLIT:-auto}" "${FP8_ARGS[@]}" --iters 3 --warmup 1
    STEP_TIMEOUT=200 step ncu_cublas $NCU -k regex:'gemm|sm90|nvjet|xmma|cutlass' --launch-skip 3 --launch-count 1 python3 /tmp/gp/cublas.py
    grep -E "^  [a-zA-Z_ ]+|gemm|nvjet|sm90|splitk|xmma|cutlass" "$OUT/ncu_rshmem.log" "$OUT/ncu_cublas.log" |
        grep -v -E "^.*: *(----|Section:)" | cut -c1-160
fi
# The symmetric queue beside a raw put of the same bytes (docs/queue.md): PE 0 -> PE 1 over
# NVLink with 2 GPUs; on one GPU, 2 PEs sharing it under MPS (CTA counts up to half a PE's
# share: queue_bench refuses more there, and `--ctas 64` must be refused at once). QB_ARGS adds
# arguments (e.g. `--sizes 1024 --kinds coop,put`).
if want queue_bench; then
    if [ "$NGPU" -ge 2 ]; then
        step queue_bench env RSHMEM_NPES=2 $BIN/queue_bench ${QB_ARGS:-}
    else
        step queue_bench_mps env RSHMEM_NPES=2 $BIN/queue_bench --ctas 1,8,16,32,33 ${QB_ARGS:-}
        STEP_TIMEOUT=60 step queue_bench_refuses env RSHMEM_NPES=2 $BIN/queue_bench --ctas 64
        grep -q "may not be resident together" "$OUT/queue_bench_refuses.log" &&
            echo "queue_bench_refuses: refused as it should" ||
            echo "queue_bench_refuses: NOT refused (see the log)"
    fi
    echo "== queue vs put (GB/s) and, on a shared GPU, where the blocks ran (QP lines)"
    grep -h -E '^(\[PE [0-9]+\] )?(QB|QP),' "$OUT"/queue_bench*.log | sed 's/^/    /'
fi
# Named only (one GPU under MPS): the case that made no progress, forced, with a short hang
# bound: confirms that the two grids are not resident together at 64 CTAs per PE (the MPS
# server is restarted after it).
if want queue_bench_hang && [ "$MPS" = 1 ]; then
    STEP_TIMEOUT=90 step queue_bench_hang env RSHMEM_NPES=2 RSHMEM_HANG_TIMEOUT=30 \
        $BIN/queue_bench --ctas 64 --sizes 1024 --kinds warp --reps 1 --force
    mps_restart >>"$OUT/mps.log" 2>&1
fi

# Launch overhead, µs per launch, plain and under graphs (kernels, and NVSHMEM's on-stream
# barrier): one PE, then two (sharing the GPU in smoke mode, where NVSHMEM's limited
# multi-process-per-GPU mode cannot record its barrier: the example says so and skips that row).
if want graphs; then
    step launch_overhead_1pe env RSHMEM_NPES=1 $BIN/launch_overhead
    step launch_overhead_2pe env RSHMEM_NPES=2 $BIN/launch_overhead
    echo "== launch overhead (µs per launch: stream, host), every PE"
    grep -h -E '^(\[PE [0-9]+\] )?LO,' "$OUT"/launch_overhead_*.log | sed 's/^/    /'
fi

# PART checked_bench, only when named: the checked device mode's cost
# (testing/api-tests/examples/checked_bench.rs): one put/get/atomic/wait-
# heavy kernel from the unchecked and the checked fixtures image, alternately, one PE (its calls
# go to itself), median of 25 CUDA-event timings each, at two sizes. (The checked image's GPU
# tests are `BINS=test-checked` of `tests`.)
if want checked_bench; then
    step checked_bench env RSHMEM_NPES=1 $BIN/checked_bench
    step checked_bench_long env RSHMEM_NPES=1 $BIN/checked_bench --iters 2048 --reps 25
    echo "== checked mode cost (image, iters, median us, min us, max us)"
    grep -h -E '^(\[PE [0-9]+\] )?CB,|checked / unchecked' "$OUT"/checked_bench*.log | sed 's/^/    /'
fi

# rshmem's collectives: the example (every algorithm checked), then the benchmark beside NCCL,
# torch symmetric memory and NVSHMEM (one PE per GPU; on one GPU, 2 PEs sharing it: a smoke test
# whose numbers mean nothing, as the script says). $OUT/collectives_bench.json, collectives.png.
if want collectives; then
    CB_NPES=${CB_NPES:-$((NGPU >= 2 ? NGPU : 2))}
    step all_reduce_example env RSHMEM_NPES=$CB_NPES $BIN/all_reduce
    STEP_TIMEOUT=${COLL_TIMEOUT:-540} step collectives_bench python3 .gpu/scripts/collectives_bench.py \
        --npes $CB_NPES --bin $BIN/collectives_bench ${COLL_ARGS:-}
    python3 .gpu/scripts/plot_collectives.py "$OUT/collectives.png" "$OUT/collectives_bench.json" \
        || echo "plotting failed (is matplotlib installed?)"
fi

# MoE dispatch and combine (only when named: `moe_bench`): rshmem's beside torch's local
# permute, one PE, and the fused layer beside its two grouped GEMMs (scripts/moe_bench.py);
# $OUT/moe_bench.json.
if want moe_bench; then
    # The fused layer's GEMMs in SASS: their HGMMAs, and local-memory traffic (LDL/STL: the
    # down GEMM's peer table is a 240-byte stack frame in ptxas's report).
    CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump | head -1)
    if [ -f .gpu/cubin/rshmem-ops-moe90.sm_90a.cubin ]; then
        "$CUOBJDUMP" -sass .gpu/cubin/rshmem-ops-moe90.sm_90a.cubin >"$OUT/rshmem-ops-moe90.sass" 2>&1
        awk '/Function :/ {f=$3} /HGMMA/ {h[f]++} /LDL|STL/ {l[f]++} END {for (k in h) print k ": " h[k] " HGMMA, " l[k]+0 " LDL/STL"}' \
            "$OUT/rshmem-ops-moe90.sass"
    fi
    STEP_TIMEOUT=${MOE_TIMEOUT:-400} step moe_bench python3 .gpu/scripts/moe_bench.py --bin $BIN/moe_bench
fi

# 2. Test binaries: the GPU instances of the generic suites (ignored on machines without GPUs),
# each test in its own process under PER_TEST_TIMEOUT; one line per test in $OUT/tests.txt.
run_tests() {
    for t in $BIN/test-*; do
        [ -x "$t" ] || continue
        # BINS=REGEX picks test binaries by name (test-tensor, test-conformance, ...).
        [[ $(basename "$t") =~ ${BINS:-.} ]] || continue
        for name in $("$t" --list --ignored 2>/dev/null | sed -n 's/^\(gpu::[^:]*\): test$/\1/p' | grep -E -- "${TESTS:-.}"); do
            pes=$(sed -n 's/.*_\([0-9]\)pe$/\1/p' <<<"$name")
            # One shared GPU: up to 4 PEs under MPS, 3 time-sliced; otherwise no more PEs than
            # GPUs.
            if [ -n "$pes" ] && { [ "$NGPU" -lt 2 ] && [ "$pes" -gt $((MPS ? 4 : 3)) ] ||
                { [ "$NGPU" -ge 2 ] && [ "$pes" -gt "$NGPU" ]; }; }; then continue; fi
            log="$OUT/$(basename "$t").${name#gpu::}.log"
            t0=$SECONDS
            timeout -k 5 "${PER_TEST_TIMEOUT:-60}" "$t" --ignored --exact "$name" --test-threads=1 >"$log" 2>&1
            rc=$?
            case $rc in 0) st=ok ;; 124|137) st=TIMEOUT ;; *) st=FAILED ;; esac
            printf '%-16s %-48s %-8s %3ss\n' "$(basename "$t")" "$name" "$st" $((SECONDS - t0)) | tee -a "$OUT/tests.txt"
            if [ $st != ok ]; then
                # The panic's message is on the line after "panicked at".
                grep -a -A1 -E "panicked at" "$log" | grep -a -v -E "panicked at|^--" | cut -c1-400 | sort -u | head -4 | sed 's/^/    /'
                # A job ended mid-kernel can leave the MPS server failing every later client.
                [ "$MPS" = 1 ] && mps_restart >>"$OUT/mps.log" 2>&1
            fi
        done
    done
}
want tests && run_tests

# Faults (issue 12): the process-level fault suite (test-fault_suite: a PE panics before and
# after init, is SIGKILLed mid-kernel, returns early, a kernel traps or waits forever (the hang
# watchdog ends it, 5 s), heap exhaustion, mismatched allocations, a bad PE number; each job
# bounded, non-zero, naming the PE and cause, leaving no process, followed by a healthy job)
# and the GPU blame test (test-faults: PE k traps while the others wait, 3 jobs per (PE count,
# culprit), the launcher names PE k and lists the others as ended). Each job is a child process
# of the test; a test holds several jobs, hence the longer per-test bound.
if want faults; then
    export RSHMEM_FAULT_MAX_NPES=$((NGPU >= 2 ? (NGPU < 4 ? NGPU : 4) : (MPS ? 4 : 3)))
    BINS='^test-(fault_suite|faults|checked)$' PER_TEST_TIMEOUT=${FAULTS_TEST_TIMEOUT:-240} run_tests
    # What the errors say, as a user reads them: one case of each kind, output not captured.
    for c in test-checked:gpu::assertion_text_reaches_the_error_2pe test-checked:gpu::bad_pe_traps_naming_the_call_2pe \
        test-checked:gpu::off_heap_address_traps_naming_the_call_2pe test-checked:gpu::endless_wait_ends_within_the_bound \
        test-fault_suite:gpu::kernel_trap test-fault_suite:gpu::wait_forever test-fault_suite:gpu::sigkill_mid_kernel; do
        timeout -k 5 120 $BIN/${c%%:*} --ignored --exact ${c#*:} --test-threads=1 --nocapture \
            >"$OUT/says.${c#*::}.log" 2>&1
    done
    echo "== what the fault errors say (first lines)"
    grep -h -a -E "expected failure|endless wait ended|the job said|^(\[PE [0-9]\] )?(rshmem: )?PE [0-9]+ (failed|hung)|job said" \
        "$OUT"/says.*.log | cut -c1-400 | head -30 | sed 's/^/    /'
fi

# 3. Put bandwidth: Rust, then the CUDA C++ NVSHMEM peer, same sizes and grids.
bandwidth() {
    if [ "$NGPU" -lt 2 ]; then
        step put_bw_rust_shared_gpu env RSHMEM_NPES=2 $BIN/put_bandwidth --ctas 8 --threads 512 --sizes 4096,1048576
        return
    fi
    SIZES=4096,16384,65536,262144,1048576,4194304,16777216,67108864,268435456
    step put_bw_rust $BIN/put_bandwidth --ctas 8,32,132 --threads 512 --sizes $SIZES
    nvcc -rdc=true -O3 -arch=sm_90 -I"$NVS/include" .gpu/scripts/cuda/put_bw.cu -o /tmp/put_bw_cu \
        -L"$NVS/lib" -l:libnvshmem_host.so.3 -lnvshmem_device -lcuda >"$OUT/nvcc.log" 2>&1 \
        || { echo "nvcc failed"; cat "$OUT/nvcc.log"; return; }
    UID_FILE=/tmp/rshmem-uid.$$
    rm -f "$UID_FILE"
    export UID_FILE SIZES
    # The peer takes its rank and the unique-ID rendezvous file on the command line.
    step put_bw_cuda bash -c '/tmp/put_bw_cu 0 2 "$UID_FILE" 8,32,132 512 $SIZES & p0=$!
        /tmp/put_bw_cu 1 2 "$UID_FILE" 8,32,132 512 $SIZES; r1=$?; wait $p0; exit $(($? | r1))'
}
want bandwidth && bandwidth

# 4. Perftest: every row of the Rust perftest (testing/device-tests/examples/perftest.rs) and of its CUDA C++
# NVSHMEM twin (scripts/cuda/perftest.cu), running the same plan (the Rust binary prints it with
# --plan gpu: grids, iterations, sizes, bandwidth slots, repetitions); both check their data
# first. N PEs, one per GPU: N = RSHMEM_NPES, else every GPU. Point-to-point rows run between
# PE 0 and PE 1 whatever N; barrier and collectives over all N. Writes, with N in each name,
# $OUT/perftest_{rust,cuda}_<N>pe.log, $OUT/perf_<N>pe.csv (row,param,unit,rust,cpp,ratio with
# ratio = rust / cpp) and $OUT/perf_<N>pe/perf_*.png (scripts/plot_perf.py; copy them to docs/).
perftest() {
    local np=${RSHMEM_NPES:-$NGPU}
    if [ "$np" -lt 2 ] || [ "$np" -gt "$NGPU" ]; then
        echo "perftest: needs 2 to $NGPU PEs, one per GPU (RSHMEM_NPES=$np); skipped"
        return
    fi
    local tag=${np}pe
    $BIN/perftest --plan gpu >"$OUT/perf-plan.csv"
    # nvcc needs minutes for NVSHMEM's collectives: compile while the Rust side runs.
    local t0=$SECONDS
    rm -f /tmp/perftest_cu
    # -Xptxas -v: registers per kernel in the log, to set beside the Rust cubin's.
    nvcc -std=c++17 -rdc=true -O3 -arch=sm_90 -Xptxas -v -I"$NVS/include" .gpu/scripts/cuda/perftest.cu \
        -o /tmp/perftest_cu -L"$NVS/lib" -l:libnvshmem_host.so.3 -lnvshmem_device -lcuda \
        >"$OUT/nvcc-perftest.log" 2>&1 &
    local nvcc_pid=$!
    step perftest_rust_$tag env RSHMEM_NPES=$np $BIN/perftest
    wait $nvcc_pid || { echo "nvcc perftest.cu failed"; tail -n 40 "$OUT/nvcc-perftest.log"; return; }
    echo "nvcc perftest.cu: $((SECONDS - t0)) s (started with the Rust run)"
    PERF_UID=/tmp/rshmem-perf-uid.$$
    rm -f "$PERF_UID"
    export PERF_UID OUT PERF_NP=$np
    # The twin takes its rank (= its GPU: it calls cudaSetDevice(rank)), the PE count, the
    # unique-ID rendezvous file and the plan on the command line: N processes, all waited for;
    # the step fails if any of them does.
    step perftest_cuda_$tag bash -c 'pids=()
        for ((r = 0; r < PERF_NP; r++)); do
            /tmp/perftest_cu $r $PERF_NP "$PERF_UID" "$OUT/perf-plan.csv" & pids+=($!)
        done
        rc=0; for p in "${pids[@]}"; do wait $p || rc=1; done; exit $rc'
    echo
    echo "== perftest on $np PEs: Rust vs CUDA C++ (ratio = rust/cpp; rust_speed > 1: Rust faster)"
    python3 - "$OUT/perftest_rust_$tag.log" "$OUT/perftest_cuda_$tag.log" "$OUT/perf_$tag.csv" <<'PY'
import csv, re, sys
def load(path, tag):
    # The Rust launcher prefixes PE output with "[PE k] ".
    d, order = {}, []
    pat = re.compile(r"^(?:\[PE \d+\] )?" + tag + r",([^,]+),(\d+),([^,]+),(\S+)$")
    try:
        for line in open(path):
            m = pat.match(line.strip())
            if m:
                key = (m.group(1), int(m.group(2)))
                d[key] = (float(m.group(3)), m.group(4))
                order.append(key)
    except FileNotFoundError:
        pass
    return d, order
rust, order = load(sys.argv[1], "PT")
cpp, corder = load(sys.argv[2], "PTC")
order += [k for k in corder if k not in rust]
with open(sys.argv[3], "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["row", "param", "unit", "rust", "cpp", "ratio"])
    print("%-22s %10s %-7s %12s %12s %7s %11s" % ("row", "param", "unit", "rust", "cpp", "ratio", "rust_speed"))
    for key in order:
        r, c = rust.get(key), cpp.get(key)
        unit = (r or c)[1]
        ratio = r[0] / c[0] if r and c and c[0] else None
        speed = None if ratio is None or ratio == 0 else (1 / ratio if unit == "us" else ratio)
        w.writerow([key[0], key[1], unit, r[0] if r else "", c[0] if c else "", "%.4f" % ratio if ratio else ""])
        fmt = lambda v, p: ("%." + str(p) + "f") % v if v is not None else "-"
        print("%-22s %10d %-7s %12s %12s %7s %11s" % (key[0], key[1], unit, fmt(r and r[0], 3),
              fmt(c and c[0], 3), fmt(ratio, 3), fmt(speed, 3)))
PY
    python3 .gpu/scripts/plot_perf.py "$OUT/perf_$tag.csv" "$OUT/perf_$tag" || echo "plotting failed (is matplotlib installed?)"
}
want perftest && perftest

# 6. The Python package (python/, only when named: `python`): its wheel (built here by
# `PYTHON=1 scripts/gpu-prepare.sh` into .gpu/wheels) installed into the machine's torch
# environment, then under torchrun with PY_NPES ranks (default 3; sharing one GPU under MPS):
# scripts/python_gpu_check.py (every op against torch, graphs, own kernels, bad input), the same
# with rank 1 failing on purpose (the job must fail naming it, not hang), and
# scripts/python_bench.py (2 ranks: beside NCCL, torch symmetric memory and cuBLAS, and the
# Python layer's per-call overhead against ops/examples/call_overhead.rs). First run on an H100
# 2026-12-05 (docs/python.md).
if want python; then
    python3 -m pip install --no-index --no-deps --force-reinstall .gpu/wheels/rshmem-*.whl >"$OUT/python_install.log" 2>&1
    PY_NPES=${PY_NPES:-3}
    export RSHMEM_HANG_TIMEOUT=${RSHMEM_HANG_TIMEOUT:-60}
    # torchrun, not rshmem's launcher, starts these ranks: under MPS each must be given its
    # share of the SMs, or NVSHMEM sees more than 100 % in all and takes its limited mode
    # (no team splits; found on an H100, 2026-12-05).
    [ "$MPS" = 1 ] && export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$((100 / PY_NPES))
    step python_check torchrun --nproc-per-node "$PY_NPES" .gpu/scripts/python_gpu_check.py \
        --kernels .gpu/kernels/rshmem-image-rshmem-example-kernels.json
    [ "$MPS" = 1 ] && mps_restart >>"$OUT/mps.log" 2>&1
    step python_fail bash -c "! torchrun --nproc-per-node $PY_NPES .gpu/scripts/python_gpu_check.py --fail-rank 1 \
        >$OUT/python_fail_run.log 2>&1; grep -q 'rank 1 fails on purpose' $OUT/python_fail_run.log"
    [ "$MPS" = 1 ] && mps_restart >>"$OUT/mps.log" 2>&1
    [ "$MPS" = 1 ] && export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50
    step python_bench torchrun --nproc-per-node 2 .gpu/scripts/python_bench.py --rust $BIN/call_overhead
fi

# The device tool brings back a limited number of files: keep the logs as one archive.
tar -C "$OUT" -czf "$OUT/logs.tar.gz" --exclude logs.tar.gz . 2>/dev/null && find "$OUT" -name '*.log' -delete

# 5. Summary.
echo
echo "== results"
for k in "${!RESULT[@]}"; do printf '%-40s %s\n' "$k" "${RESULT[$k]}"; done | sort
echo
echo "== put bandwidth PE0 -> PE1, GB/s (Rust / CUDA C++ = ratio)"
python3 - "$OUT/put_bw_rust.log" "$OUT/put_bw_cuda.log" <<'PY'
import sys
def load(path, tag):
    d = {}
    try:
        for line in open(path):
            # PE output comes prefixed with "[PE k] " by the launcher.
            line = line.split("] ", 1)[1] if line.startswith("[PE ") else line
            if line.startswith(tag + ","):
                _, c, s, g = line.strip().split(",")
                d[(int(c), int(s))] = float(g)
    except FileNotFoundError:
        pass
    return d
rust, cuda = load(sys.argv[1], "BW"), load(sys.argv[2], "CUBW")
ctas = sorted({c for c, _ in rust} | {c for c, _ in cuda})
sizes = sorted({s for _, s in rust} | {s for _, s in cuda})
print("%10s" % "size" + "".join("%24s" % ("%d CTAs" % c) for c in ctas))
for s in sizes:
    lab = "%d MiB" % (s >> 20) if s >= 1 << 20 else "%d KiB" % (s >> 10)
    row = "%10s" % lab
    for c in ctas:
        r, u = rust.get((c, s)), cuda.get((c, s))
        cell = "%s / %s" % ("%.0f" % r if r else "-", "%.0f" % u if u else "-")
        if r and u:
            cell += " = %.2f" % (r / u)
        row += "%24s" % cell
    print(row)
PY
