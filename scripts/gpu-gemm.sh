#!/usr/bin/env bash
# The GEMM's GPU run (device tool, one H200): SASS facts of the sm_90a image, correctness
# tests of the GEMM kernels, then the speed probe and cuBLAS (torch.matmul) on the same shapes,
# in this one run. Every step has its own bound and its own log in $OUT; a step that hangs is
# inspected with cuda-gdb before it is killed. .gpu/ is made by scripts/gpu-prepare.sh.
#   PARTS="sass small tests probe cublas" (default: all)
set -uo pipefail
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export RSHMEM_BACKEND=gpu RUST_LIB_BACKTRACE=0
OUT=${OUT:-/tmp/rshmem-out}
mkdir -p "$OUT"
G=.gpu
PARTS=${PARTS:-sass small longk_nosmr longk_nk tests probe cublas}
want() { [[ " $PARTS " == *" $1 "* ]]; }
NVS=$(python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])")
export NVSHMEM_HOME=$NVS LD_LIBRARY_PATH=$NVS/lib:${LD_LIBRARY_PATH:-}
CUDA_BIN=$(dirname "$(command -v nvcc || ls /usr/local/cuda*/bin/nvcc | head -1)")
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader

# step NAME BOUND CMD...: runs CMD in the background; if it outlives 2/3 of BOUND, cuda-gdb
# prints where its GPU warps are, then it is killed at BOUND.
step() {
    local name=$1 bound=$2; shift 2
    echo "=== $name: $*"
    local t0=$SECONDS
    "$@" >"$OUT/$name.log" 2>&1 &
    local pid=$!
    while kill -0 $pid 2>/dev/null && (( SECONDS - t0 < bound * 2 / 3 )); do sleep 1; done
    if kill -0 $pid 2>/dev/null; then
        echo "--- $name still running after $((SECONDS - t0)) s: GPU state"
        nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
        if [ "${GDB:-1}" = 1 ]; then
            # The newest process of that name: the PE process that runs the kernel.
            timeout 45 "$CUDA_BIN/cuda-gdb" -q -batch -p "$(pgrep -n -f "$(basename "$1")")" \
                -ex "info cuda kernels" -ex "info cuda warps" -ex "x/4i \$pc" 2>&1 \
                | grep -v "^\[New\|^warning" | head -60 | tee "$OUT/$name.gdb"
        fi
        while kill -0 $pid 2>/dev/null && (( SECONDS - t0 < bound )); do sleep 1; done
        pkill -9 -f "$(basename "$1")"
    fi
    wait $pid; local rc=$?
    tail -n 30 "$OUT/$name.log"
    echo "=== $name: rc=$rc $((SECONDS - t0)) s"
}

if want sass; then
    for cubin in $G/*.cubin; do
        "$CUDA_BIN/cuobjdump" -sass "$cubin" >"$OUT/$(basename "$cubin").sass" 2>&1
        echo "$(basename "$cubin"): $(grep -c HGMMA "$OUT/$(basename "$cubin").sass") HGMMA"
        grep -o "HGMMA[.A-Z0-9x]*" "$OUT/$(basename "$cubin").sass" | sort | uniq -c | head -4
    done
fi
want small && PROBE_SHAPES="256,256,128" PROBE_VARIANTS="nosmr,nk,kn" step small 60 $G/gemm_probe
want longk_nosmr && PROBE_SHAPES="512,256,1024" PROBE_VARIANTS="nosmr" step longk_nosmr 40 $G/gemm_probe
if want bisect; then
    for shape in 256,256,256 256,256,320 128,256,1024; do
        for v in nk nosmr; do
            PROBE_SHAPES=$shape PROBE_VARIANTS=$v step "bisect_${shape//,/x}_$v" 15 $G/gemm_probe
        done
    done
fi
want longk_nk && PROBE_SHAPES="512,256,1024" PROBE_VARIANTS="nk" step longk_nk 30 $G/gemm_probe
if want tests; then
    for t in $G/test-*; do step "$(basename "$t")" 120 "$t" --ignored --test-threads=1 gpu::; done
fi
want probe && step probe 240 $G/gemm_probe
if want cublas; then
    echo "=== cuBLAS (torch.matmul bf16, A @ B.T with B n x k; A @ B with B k x n), median of 20"
    python3 - <<'PY'
import torch
shapes = [(8192,8192,8192),(4096,4096,4096),(2048,2048,2048),(8192,1024,8192),(8192,4096,8192),(4096,6144,12288),(8192,8192,3584)]
for m,n,k in shapes:
    a = torch.randn(m,k,device='cuda',dtype=torch.bfloat16)
    for kn in (False, True):
        b = torch.randn(k,n,device='cuda',dtype=torch.bfloat16) if kn else torch.randn(n,k,device='cuda',dtype=torch.bfloat16)
        f = (lambda: torch.matmul(a,b)) if kn else (lambda: torch.matmul(a,b.T))
        for _ in range(3): f()
        ts=[]
        for _ in range(20):
            s,e=torch.cuda.Event(enable_timing=True),torch.cuda.Event(enable_timing=True)
            s.record(); f(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
        ts.sort(); med=ts[10]
        print(f"| {m} | {n} | {k} | cublas {'kn' if kn else 'nk'} | {med:.3f} | {2*m*n*k/med/1e9:.0f} |", flush=True)
PY
fi
