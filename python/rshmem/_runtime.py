"""Which PE the calling code is: the process's (started by `rshmem.init()` under torchrun) or,
on the simulator, the calling thread's (`rshmem.sim.run` runs each PE on a thread)."""

import atexit
import os
import threading

from . import _native
from ._native import RshmemError

class _Local(threading.local):
    """A thread's PE on the simulator (`pe`) and the tensors an `rshmem.capture` on it keeps
    (`capture_keep`). Defaults as class attributes: every op reads both, and a `getattr`
    that misses costs an exception, about a microsecond per op."""

    pe = None
    capture_keep = None


_local = _Local()
_process_pe = None


def current():
    """The calling code's PE (`_native.Pe`); an error saying how to start one if none is."""
    pe = _local.pe or _process_pe
    if pe is None:
        raise RshmemError(
            "no rshmem PE in this process or thread: call rshmem.init() first (in a process "
            "started by torchrun, or after torch.distributed.init_process_group), or run the "
            "code under rshmem.sim.run(fn, npes) on the CPU simulator"
        )
    return pe


def my_pe():
    """This PE's number."""
    return current().my_pe


def n_pes():
    """The number of PEs."""
    return current().n_pes


def backend():
    """`"gpu"` or `"sim"`."""
    return current().backend


def barrier_all():
    """Host-side barrier over all PEs, after this PE's queued work (collective)."""
    current().barrier_all()


def synchronize(stream=None):
    """Waits for this PE's work: on `stream` (a torch stream or raw handle), or every stream."""
    pe = current()
    pe.synchronize(None if stream is None else stream_handle(pe, stream))


def stream_handle(pe, stream):
    """The raw stream handle rshmem queues on: `stream`'s (a torch.cuda.Stream or an int), else
    torch's current stream on GPUs; `None` (the PE's own stream) on the simulator."""
    if stream is None and pe is _process_pe and _current_raw_stream is not None:
        return _current_raw_stream(-1)  # -1: torch's current device
    if pe.backend == "sim":
        return None
    if stream is None:
        return _torch_current_stream()
    return getattr(stream, "cuda_stream", stream)


def _torch_current_stream():
    """torch's current stream's raw handle. `torch.cuda.current_stream()` builds a Stream
    object per call (microseconds per op): the process's GPU PE remembers torch's direct query
    of the handle instead, once it gave the same answer."""
    global _current_raw_stream
    import torch

    handle = torch.cuda.current_stream().cuda_stream
    query = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    try:
        if query is not None and query(-1) == handle:
            _current_raw_stream = query
    except (TypeError, RuntimeError):
        pass
    return handle


# torch's query of the current raw stream (`_torch_current_stream`), or None.
_current_raw_stream = None


_REQUIRED = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def init(group=None, device=None, hang_timeout=None):
    """Starts this process's PE on its GPU, NVSHMEM bootstrapped by unique ID: rank 0 of
    `group` (default: the default process group, which this initialises from torchrun's
    variables if needed) makes the ID, torch.distributed carries it to every rank, and each
    starts its PE on `device` (default: `LOCAL_RANK` modulo the visible GPUs, made torch's
    current device) with the device's primary context, torch's. Collective over the group.
    Returns the PE. Not yet run on a GPU (see docs/python.md)."""
    global _process_pe
    if _process_pe is not None:
        return _process_pe
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise RshmemError("rshmem.init: this torch has no torch.distributed")
    if not torch.cuda.is_available():
        raise RshmemError(
            "rshmem.init: torch sees no CUDA device; rshmem's GPU PEs need one (on a machine "
            "without GPUs, run the code under rshmem.sim.run(fn, npes) instead)"
        )
    if device is None:
        local = os.environ.get("LOCAL_RANK")
        device = int(local) % torch.cuda.device_count() if local is not None else torch.cuda.current_device()
    torch.cuda.set_device(device)
    from . import _tensors

    _tensors._torch_types()  # the ops read torch tensors natively from the first call
    if group is None and not dist.is_initialized():
        missing = [v for v in _REQUIRED if v not in os.environ]
        if missing:
            raise RshmemError(
                "rshmem.init: no torch.distributed process group, and the launcher's variables "
                f"{', '.join(missing)} are not set: start the program with torchrun (which sets "
                "RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT), or call "
                "torch.distributed.init_process_group first, or pass group="
            )
        dist.init_process_group(backend="cpu:gloo,cuda:nccl")
    rank = dist.get_rank(group)
    world = dist.get_world_size(group)
    # The ID travels over gloo (CPU): NCCL refuses ranks that share a GPU, as under MPS.
    ranks = None if group is None else dist.get_process_group_ranks(group)
    carrier = dist.new_group(ranks=ranks, backend="gloo")
    uid = [_native.unique_id() if rank == 0 else None]
    src = 0 if group is None else dist.get_global_rank(group, 0)
    dist.broadcast_object_list(uid, src=src, group=carrier)
    dist.destroy_process_group(carrier)
    _process_pe = _native.attach_gpu(rank, world, device, uid[0], hang_timeout)
    atexit.register(_at_exit)
    return _process_pe


def finalize():
    """Ends this process's PE collectively (NVSHMEM's finalize; every PE calls it): refused
    while symmetric tensors, kernel modules, graphs or MoE buffers are alive."""
    global _process_pe
    if _process_pe is None:
        return
    _process_pe.end(True)
    _process_pe = None


def _at_exit():
    """At interpreter exit a PE not finalized is abandoned, never torn down collectively
    (another rank may have exited already): no hang at exit."""
    global _process_pe
    if _process_pe is not None:
        _process_pe.end(False)
        _process_pe = None
