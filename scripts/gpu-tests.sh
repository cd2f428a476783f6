#!/usr/bin/env bash
# Runs the `gpu::` instances of chosen test binaries on the GPU machine and keeps, per binary,
# one line per test (ok / FAILED) and the failure messages: compact enough to bring back.
#   bash .gpu/scripts/gpu-tests.sh BINARY [extra libtest args...]
set -uo pipefail
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export RSHMEM_BACKEND=gpu RUST_LIB_BACKTRACE=0
OUT=${OUT:-/tmp/rshmem-out}
[ -d .gpu/bin ] || python3 -c "import tarfile; tarfile.open('.gpu/bin.tar.xz').extractall('.gpu')"
NVS=$(python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])")
export NVSHMEM_HOME=$NVS LD_LIBRARY_PATH=$NVS/lib:${LD_LIBRARY_PATH:-}
# One GPU: its PEs share it under MPS (GPU_SHARING=mps, the default; scripts/mps.sh) or
# time-sliced (GPU_SHARING=timeslice: RSHMEM_GPU_OVERSUBSCRIBE=1, NVSHMEM's limited mode).
if [ "$(nvidia-smi -L | grep -c '^GPU')" -lt 2 ]; then
    if [ "${GPU_SHARING:-mps}" = mps ]; then
        source "$(dirname "$0")/mps.sh" && mps_start
    else
        export RSHMEM_GPU_OVERSUBSCRIBE=1
    fi
fi
bin=$1; shift
log="$OUT/$bin.full.log"
timeout -k 10 "${STEP_TIMEOUT:-300}" .gpu/bin/"$bin" --ignored gpu:: --test-threads=1 "$@" >"$log" 2>&1
echo "$bin rc=$?"
grep -a -E "^test gpu::[^ ]+ \.\.\. (ok|FAILED)|^\[PE 0\] test gpu::[^ ]+ \.\.\. (ok|FAILED)" "$log" | sed 's/^\[PE 0\] //' | sort -u
grep -a -E "panicked at|failed on PE|Error:" "$log" | grep -v "^\[PE [1-9]" | cut -c1-300 | sort -u | head -20
