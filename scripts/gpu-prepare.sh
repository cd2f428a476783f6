#!/usr/bin/env bash
# Builds here (no GPU needed) everything scripts/gpu-check.sh runs on the GPU machine, and
# copies it into .gpu/ (ignored by git, carried by the device tool):
#   .gpu/bin.tar.xz  release example binaries and test binaries (unpacked to .gpu/bin there)
#   .gpu/cubin.tar.xz, .gpu/kernels.tar.xz  the GEMM images' cubins (SASS checks), the examples' image (PYTHON=1)
#   .gpu/scripts/  gpu-check.sh and the CUDA C++ peers, compiled there with nvcc
set -euo pipefail
cd "$(dirname "$0")/.."
# rshmem's examples and tests, rshmem-api-tests's (the API suites over the test fixtures),
# rshmem-device-tests's (the suites of the heavy kernel images) and rshmem-ops' (the GEMM's suite,
# test-gemm, the fused ops' test-fused, the collectives' suite test-coll, and the benchmark
# binaries gemm_bench, tp_bench and collectives_bench, which scripts/gemm_bench.py,
# scripts/tp_bench.py and scripts/collectives_bench.py drive). Test
# binaries keep their names (test-basics, test-queue, ...) whichever package holds them.
# PACKAGES narrows the build (e.g. PACKAGES="rshmem-ops" for a GEMM-only run: the heavy
# device-tests images, whose ptxas takes many minutes, are then not built).
PACKAGES=${PACKAGES:-rshmem rshmem-api-tests rshmem-device-tests rshmem-ops}
cargo build --release $(printf -- '-p %s ' $PACKAGES) --examples --tests \
    --message-format=json-render-diagnostics >/tmp/rshmem-gpu-build.json
rm -rf .gpu && mkdir -p .gpu/bin .gpu/scripts
python3 - <<'PY'
import json, shutil, subprocess
for line in open('/tmp/rshmem-gpu-build.json'):
    m = json.loads(line)
    if m.get('reason') != 'compiler-artifact' or not m.get('executable'):
        continue
    kinds = m['target']['kind']
    name = m['target']['name']
    if 'example' in kinds:
        dst = '.gpu/bin/' + name
    elif m['profile']['test']:
        # Only test binaries with GPU instances (`gpu::` tests, ignored where there is no GPU).
        listed = subprocess.run([m['executable'], '--list', '--ignored'], capture_output=True, text=True).stdout
        if 'gpu::' not in listed:
            continue
        dst = '.gpu/bin/test-' + name
    else:
        continue
    shutil.copy2(m['executable'], dst)
    subprocess.run(['strip', dst])
    print('carry', dst)
PY
# Every binary embeds its kernel images (PTX + cubin per architecture): compress the binaries
# to stay inside the device tool's 64 MiB carry (xz: gzip did not fit while every binary held
# every kernel); the scripts unpack them there with Python's tarfile, which reads xz everywhere.
tar -C .gpu -cf - bin | xz -T2 -6 >.gpu/bin.tar.xz && rm -rf .gpu/bin
cp scripts/gpu-check.sh scripts/gpu-one-h200.sh scripts/gpu-tests.sh scripts/mps.sh scripts/gpu-hang.sh scripts/plot_perf.py scripts/gemm_bench.py \
    scripts/rshmem_env.py scripts/collectives_bench.py scripts/plot_collectives.py scripts/tp_bench.py scripts/plot_tp_bench.py scripts/moe_bench.py scripts/hbm_read.py .gpu/scripts/
cp -r scripts/cuda .gpu/scripts/
cp scripts/python_gpu_check.py scripts/python_bench.py .gpu/scripts/
# PYTHON=1: the Python package's wheel (abi3: any CPython >= 3.9, the GPU machine's torch
# environment's included) into .gpu/wheels, and the examples' kernel image (manifest, PTX,
# cubins: the files `rshmem.load_kernels` reads) into .gpu/kernels, for gpu-check.sh's `python`.
# maturin comes from the virtual environment the Python tests make (target/python-venv:
# `cargo test -p rshmem-python`), else from PATH.
if [ "${PYTHON:-0}" = 1 ]; then
    MATURIN=$(ls target/python-venv/bin/maturin 2>/dev/null || command -v maturin)
    "$MATURIN" build --release --manifest-path python/Cargo.toml --out .gpu/wheels
    EX_OUT=$(dirname "$(ls -t target/release/build/rshmem-examples-image-*/out/rshmem-image-rshmem-example-kernels.json | head -1)")
    mkdir -p .gpu/kernels && cp "$EX_OUT"/rshmem-image-rshmem-example-kernels.json "$EX_OUT"/rshmem-example-kernels.sm_* .gpu/kernels/
fi
# The GEMM images' cubins, for the SASS check (cuobjdump reads cubins, not our embedding).
# rshmem-ops may have several build folders (one per feature set): take the newest's.
OPS_OUT=$(dirname "$(ls -t target/release/build/rshmem-ops-*/out/rshmem-ops-gemm90.sm_90a.cubin | head -1)")
mkdir -p .gpu/cubin && cp "$OPS_OUT"/*.cubin .gpu/cubin/
# Cubins and PTX shrink about twentyfold under xz (9 MiB of cubins to 0.5 MiB): carried packed,
# gpu-check.sh unpacks them (with the binaries), so the wheel's bundle stays under 64 MiB.
for dir in cubin kernels; do
    [ -d .gpu/$dir ] && tar -C .gpu -cf - $dir | xz -T2 -6 >.gpu/$dir.tar.xz && rm -rf .gpu/$dir
done
du -sh .gpu
