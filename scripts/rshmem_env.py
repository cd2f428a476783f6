"""The environment rshmem's benchmark binaries run in on the GPU machine, for the benchmark
scripts beside this file (gpu-prepare.sh copies them all into .gpu/scripts)."""

import os
import subprocess


def mps_running():
    """Whether an MPS control daemon answers (rshmem's launcher then shares the GPU under it)."""
    try:
        return subprocess.run(["nvidia-cuda-mps-control"], input="get_default_active_thread_percentage\n",
                              capture_output=True, text=True, timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def bench_env(npes, ngpu, symmetric_size, under_mps=True):
    """The GPU backend with `npes` PEs on `ngpu` GPUs: more PEs than GPUs share them under MPS
    when its daemon answers (and `under_mps`), else in NVSHMEM's limited mode
    (RSHMEM_GPU_OVERSUBSCRIBE=1, the PEs' kernels time-slice); NVSHMEM's heap `symmetric_size`
    unless the caller set one, and its library from the nvidia-nvshmem wheel where that is
    installed."""
    env = dict(os.environ)
    env.update(RSHMEM_BACKEND="gpu", RSHMEM_NPES=str(npes), RUST_LIB_BACKTRACE="0")
    if npes > ngpu and not (under_mps and mps_running()):
        env["RSHMEM_GPU_OVERSUBSCRIBE"] = "1"
    env.setdefault("NVSHMEM_SYMMETRIC_SIZE", symmetric_size)
    try:
        import nvidia.nvshmem as nvs
        home = list(nvs.__path__)[0]
        env.setdefault("NVSHMEM_HOME", home)
        env["LD_LIBRARY_PATH"] = home + "/lib:" + env.get("LD_LIBRARY_PATH", "")
    except ImportError:
        pass  # NVSHMEM found otherwise (NVSHMEM_HOME, the loader path)
    return env
