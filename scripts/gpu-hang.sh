#!/usr/bin/env bash
# Runs on the GPU machine: one `gpu::` test of a carried test binary, and if it is still
# running after DELAY seconds, shows where each of its processes is (the launcher and every PE:
# host threads' backtraces, and the GPU's kernels and threads where cuda-gdb can see them),
# then ends it. For hangs that a per-test bound can only report, not explain.
#
#   bash .gpu/scripts/gpu-hang.sh BINARY TEST [DELAY]     e.g. test-conformance gpu::iput_iget_2pe 15
set -uo pipefail
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export RSHMEM_BACKEND=gpu RUST_LIB_BACKTRACE=0
OUT=${OUT:-/tmp/rshmem-out}
mkdir -p "$OUT"
[ -d .gpu/bin ] || python3 -c "import tarfile; tarfile.open('.gpu/bin.tar.xz').extractall('.gpu')"
NVS=$(python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])")
export NVSHMEM_HOME=$NVS LD_LIBRARY_PATH=$NVS/lib:${LD_LIBRARY_PATH:-}
bin=$1 test=$2 delay=${3:-15}
log="$OUT/hang.${test#gpu::}.log"
.gpu/bin/"$bin" --ignored --exact "$test" --test-threads=1 >"$log" 2>&1 &
pid=$!
sleep "$delay"
if ! kill -0 $pid 2>/dev/null; then
    wait $pid
    echo "$test ended by itself (rc=$?) within ${delay}s"
    tail -n 20 "$log"
    exit 0
fi
echo "$test still running after ${delay}s"
for p in $(pgrep -f -- "--exact $test"); do
    pe=$(tr '\0' '\n' </proc/"$p"/environ | sed -n 's/^RSHMEM_PE=//p')
    dump="$OUT/hang.${test#gpu::}.${pe:-launcher}.gdb"
    timeout -k 5 60 cuda-gdb -batch -p "$p" \
        -ex "info cuda kernels" -ex "info cuda threads" -ex "thread apply all bt 40" >"$dump" 2>&1
    # Where it is: the GPU's kernels and threads, and the Rust frames of the host threads.
    echo "## PE ${pe:-(launcher)}, process $p"
    grep -a -E "^\*? +[0-9]+ +-? +[0-9]+ +[0-9]+ +Active|^\*? +\([0-9,]+\) +\([0-9,]+\)|^Thread [0-9]|in [a-z_]+::" "$dump" |
        grep -a -v -E "std::|core::|__rust|libc|test::run" | cut -c1-170 | head -30
done
kill -TERM $pid
wait $pid 2>/dev/null
grep -a -v "^\[PE [0-9]\] *$" "$log" | tail -n 15
