"""Your own kernels from Python: the examples' image loaded from its manifest (the file
rshmem-builder writes beside every image), kernels launched by name, arguments checked
against each kernel's recorded parameter list; and a user's image whose kernels the
extension was not compiled with, run on the simulator from its simulator library."""

import numpy as np
import pytest

import rshmem
from conftest import run
from rshmem.bits import bf16_to_f32, f32_to_bf16

MANIFEST = rshmem._native.example_manifest()
pytestmark = pytest.mark.skipif(MANIFEST is None, reason="built without the examples' kernels")


def test_the_manifest_carries_each_kernels_parameter_list():
    def pe_main():
        k = rshmem.load_kernels(MANIFEST)
        return k.name, k.signatures()

    name, sigs = run(pe_main, 1)[0]
    assert name == "rshmem-example-kernels"
    assert sigs["hello_fill"] == "buf: *mut i32, len: u32"
    assert sigs["put_bw"] == "dst: *mut u8, src: *const u8, bytes: u64, iters: u32, from: i32, to: i32"


def test_launch_by_name_on_every_pe(npes):
    def pe_main():
        k = rshmem.load_kernels(MANIFEST)
        buf = rshmem.empty(100, "i32")
        k.launch("hello_fill", 1, 128, buf, 100)
        ring = rshmem.empty(1, "i32")
        k.launch("ring", 1, 1, ring, cooperative=True)
        x = rshmem.empty(40, "bf16")
        f32_to_bf16(np.linspace(-2, 2, 40), out=x)
        k.launch("gelu_bf16", 2, 32, x, 40)
        return buf.copy(), int(ring[0]), bf16_to_f32(x)

    xs = np.linspace(-2, 2, 40)
    gelu = 0.5 * xs * (1 + np.tanh(np.sqrt(2 / np.pi) * (xs + 0.044715 * xs ** 3)))
    for pe, (buf, left, g) in enumerate(run(pe_main, npes)):
        assert buf.tolist() == [pe * 1000 + i for i in range(100)]
        assert left == (pe - 1) % npes
        np.testing.assert_allclose(g, gelu, atol=2e-2)


def test_arguments_are_checked_against_the_signature():
    def pe_main():
        k = rshmem.load_kernels(MANIFEST)
        buf = rshmem.empty(4, "i32")
        with pytest.raises(rshmem.ArgumentError, match=r"1 argument\(s\) given, the kernel takes 2"):
            k.launch("hello_fill", 1, 32, buf)
        with pytest.raises(rshmem.ArgumentError, match="points to i32, but the tensor passed is f32"):
            k.launch("hello_fill", 1, 32, rshmem.empty(4, "f32"), 4)
        with pytest.raises(rshmem.ArgumentError, match="outside the range"):
            k.launch("hello_fill", 1, 32, buf, -1)
        with pytest.raises(rshmem.ArgumentError, match="is a pointer: pass a tensor"):
            k.launch("hello_fill", 1, 32, 7, 4)
        with pytest.raises(rshmem.ArgumentError, match="no such kernel.*hello_fill"):
            k.launch("hello_fil", 1, 32, buf, 4)
        with pytest.raises(rshmem.ArgumentError, match="SymQueue.*cannot be passed from Python"):
            k.launch("queue_push", 1, 32, buf, buf, 4)
        with pytest.raises(rshmem.ArgumentError, match="not a tensor"):
            k.launch("hello_fill", 1, 32, "buf", 4)

    run(pe_main, 1)


USER_MANIFEST = rshmem._native.user_manifest()


def test_your_own_kernels_run_from_their_simulator_library(npes):
    """`testing/kernels/user` is not compiled into the extension: on the simulator its kernels
    run only from the library the builder made beside the image."""
    def pe_main():
        k = rshmem.load_kernels(USER_MANIFEST)
        rng = np.random.default_rng()
        x = rng.standard_normal(1000).astype(np.float32)
        y0 = rng.standard_normal(1000).astype(np.float32)
        y = y0.copy()
        k.launch("axpy", 8, 128, x, y, 1000, 3.0)
        me, n = rshmem.my_pe(), rshmem.n_pes()
        src = rshmem.empty(37, "i64")
        src[:] = me * 1000 + np.arange(37)
        dst = rshmem.zeros(37, "i64")
        rshmem.barrier_all()
        k.launch("shift", 1, 32, src, dst, 37, cooperative=True)
        vals = rng.integers(-1000, 1000, 96).astype(np.int32)
        total = np.zeros(1, np.int32)
        k.launch("block_sum", 1, 96, vals, total, shared_mem=4 * 96)
        rshmem.synchronize()
        shifted = dst.copy()
        rshmem.barrier_all()
        return k.sim_library, x, y0, y, shifted, vals, int(total[0])

    results = run(pe_main, npes)
    for pe, (lib, x, y0, y, shifted, vals, total) in enumerate(results):
        assert lib.endswith("librshmem-user-kernels.sim.so")
        np.testing.assert_array_equal(y, np.float32(3.0) * x + y0)
        assert shifted.tolist() == [((pe - 1) % npes) * 1000 + i for i in range(37)]
        assert total == int(vals.sum())


def test_a_panic_in_your_kernel_names_it_and_its_message():
    def pe_main():
        k = rshmem.load_kernels(USER_MANIFEST)
        with pytest.raises(rshmem.RshmemError, match=r"fail_on.*PE 0.*panicked: fail_on: PE 0 fails on purpose"):
            k.launch("fail_on", 1, 32, 0)
            rshmem.synchronize()
        with pytest.raises(rshmem.ArgumentError, match=r"2 argument\(s\) given, the kernel takes 1 \(pe: i32\)"):
            k.launch("fail_on", 1, 32, 0, 1)

    run(pe_main, 1)
