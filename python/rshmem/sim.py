"""Simulated PEs: `run(fn, npes)` calls `fn(*args)` once per PE, each PE a thread of this
process on rshmem's CPU simulator, and returns what each returned (in PE order). Inside `fn`,
`rshmem.my_pe()` is the thread's PE and every rshmem call works as on a GPU PE; symmetric
tensors are numpy arrays over the simulated heap.

A PE whose `fn` raises fails the job: the PEs waiting for it in a collective, an allocation or
a kernel's wait fail too, naming it (no hang), and `run` raises `rshmem.RshmemError` naming the
PE that failed of its own accord (`.pe`), with its traceback. Settings: `RSHMEM_SIM_HEAP`
(symmetric heap per PE, default 64M), `RSHMEM_SIM_MAX_THREADS`, `RSHMEM_SIM_WAIT_TIMEOUT`.
"""

from . import _native, _runtime


def run(fn, npes=2, args=()):
    """Runs `fn(*args)` on `npes` simulated PEs; returns their results in PE order."""

    def main(pe):
        _runtime._local.pe = pe
        try:
            return fn(*args)
        finally:
            _runtime._local.pe = None

    return _native.sim_run(main, npes)
