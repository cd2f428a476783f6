"""Your own Rust kernels: `load_kernels(manifest)` loads the image rshmem-builder built from
your kernel crate (the `rshmem-image-<crate>.json` it writes beside the image) on this PE;
`kernels.launch(name, grid, block, *args)` launches a kernel by name, its arguments checked
against the kernel's parameter list (count, pointer element types, value ranges) before
anything is queued: tensors for pointers, Python numbers for values. On the simulator the
kernels run from the image's simulator library (`Builder::sim_library(true)`)."""

import numbers

from . import _native, _runtime
from ._native import ArgumentError
from ._tensors import tensor_arg


def _dim3(v, what):
    if isinstance(v, numbers.Integral):
        return (int(v), 1, 1)
    v = tuple(int(x) for x in v)
    if not 1 <= len(v) <= 3:
        raise ArgumentError(f"{what} {v}: one to three extents")
    return v + (1,) * (3 - len(v))


class Kernels:
    """An image loaded on this PE."""

    def __init__(self, native, pe):
        self._native = native
        self._pe = pe

    @property
    def name(self):
        return self._native.name

    @property
    def sim_library(self):
        """On the simulator, the library the kernels run from (the kernel crate built for the
        host: `Builder::sim_library`), else `None`."""
        return self._native.sim_library

    def signatures(self):
        """`{kernel: "x: *mut f32, n: u32"}`: each kernel's parameter list as written."""
        return dict(self._native.signatures())

    def launch(self, name, grid, block, *args, shared_mem=0, cooperative=False, stream=None):
        """Launches kernel `name` on `grid` x `block` with `args` (tensors for pointer
        parameters, numbers for the others), queued on `stream`. `cooperative=True` for kernels
        that wait on other blocks or PEs. The kernel's own contract (sizes, what its pointers
        may touch) is the caller's, as in Rust's `unsafe` launch."""
        call = f"launch of {name}"
        packed = [a if isinstance(a, (bool, numbers.Number)) else tensor_arg(a, f"argument {i}", call)
                  for i, a in enumerate(args)]
        self._native.launch(name, _dim3(grid, "grid"), _dim3(block, "block"), packed, shared_mem,
                            cooperative, _runtime.stream_handle(self._pe, stream))


def load_kernels(manifest):
    """Loads the kernel image described by `manifest` (a path) on this PE."""
    pe = _runtime.current()
    return Kernels(_native.load_kernels(pe, str(manifest)), pe)
