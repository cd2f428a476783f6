"""Your own kernels from Python: the examples' image loaded from its manifest (the file
rshmem-builder writes beside every image), kernels launched by name, arguments checked
against each kernel's recorded parameter list."""

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
