"""Starting PEs, symmetric tensors (types, views, lifetimes), and failures."""

import numpy as np
import pytest

import rshmem
from conftest import run


def test_no_pe_outside_a_job_says_how_to_start_one():
    with pytest.raises(rshmem.RshmemError, match=r"rshmem.init\(\).*rshmem.sim.run"):
        rshmem.my_pe()


def test_each_pe_knows_itself_and_returns_its_value(npes):
    out = run(lambda: (rshmem.my_pe(), rshmem.n_pes(), rshmem.backend()), npes)
    assert out == [(pe, npes, "sim") for pe in range(npes)]


@pytest.mark.parametrize(
    "dtype,storage",
    [("bf16", np.uint16), ("f16", np.float16), ("f32", np.float32), ("i32", np.int32),
     ("i64", np.int64), ("fp8_e4m3", np.uint8), (np.float64, np.float64), ("u8", np.uint8)],
)
def test_empty_is_zeroed_typed_and_writable(dtype, storage):
    def pe_main():
        t = rshmem.empty((3, 5), dtype)
        assert t.shape == (3, 5) and t.dtype == storage
        assert isinstance(t, rshmem.SymArray) and not t.any()
        t[...] = 1
        t[1:2] = 7
        return t.copy()

    for got in run(pe_main, 2):
        assert got[1].tolist() == [7] * 5 and got[0].tolist() == [1] * 5


def test_views_and_slices_reach_the_symmetric_range():
    """An op on a slice of a symmetric tensor touches that slice only."""

    def pe_main():
        x = rshmem.zeros(16, "f32")
        x[...] = np.arange(16) + 100 * rshmem.my_pe()
        rshmem.all_reduce(x[4:8])
        return x.copy()

    a, b = run(pe_main, 2)
    expected = np.arange(16, dtype=np.float32)
    expected[4:8] = 2 * np.arange(4, 8) + 100
    assert a.tolist() == expected.tolist()
    assert b[:4].tolist() == (np.arange(4) + 100).tolist()


def test_non_contiguous_views_and_copies_are_refused_clearly():
    def pe_main():
        x = rshmem.zeros((4, 4), "f32")
        with pytest.raises(rshmem.ArgumentError, match="not contiguous"):
            rshmem.all_reduce(x[:, 1])
        with pytest.raises(rshmem.ArgumentError, match="not on PE .*symmetric heap.*rshmem.empty"):
            rshmem.all_reduce(np.zeros(4, np.float32))
        with pytest.raises(rshmem.ArgumentError, match="not on PE"):
            rshmem.all_reduce(x.copy())
        with pytest.raises(rshmem.ArgumentError, match="unknown element type"):
            rshmem.empty(4, "f17")

    run(pe_main, 2)


def test_a_tensor_outliving_its_pe_stays_readable_and_refuses_work():
    """Keep-alive: the simulated heap stays mapped while a tensor uses it."""

    def pe_main():
        x = rshmem.zeros(8, "i32")
        x[...] = rshmem.my_pe() + 1
        return x

    kept = run(pe_main, 2)
    assert [k.tolist() for k in kept] == [[1] * 8, [2] * 8]
    kept[0][0] = 5  # still mapped
    with pytest.raises(rshmem.RshmemError, match="no rshmem PE"):
        rshmem.all_reduce(kept[0])


def test_ending_a_pe_with_tensors_alive_is_refused_when_collective():
    def pe_main():
        x = rshmem.zeros(8, "i32")
        with pytest.raises(rshmem.RshmemError, match="1 symmetric tensor.*still alive"):
            rshmem.current().end(True)
        del x
        rshmem.barrier_all()

    run(pe_main, 2)


def test_a_rank_that_raises_fails_the_job_naming_it_and_the_others_do_not_hang():
    def pe_main():
        x = rshmem.zeros(64, "f32")
        if rshmem.my_pe() == 1:
            raise ValueError("rank one gives up")
        rshmem.all_reduce(x)  # the others wait for PE 1 here
        rshmem.barrier_all()

    with pytest.raises(rshmem.RshmemError, match=r"(?s)PE 1 failed.*ValueError: rank one gives up.*PE 0, PE 2 failed waiting for PE 1") as e:
        run(pe_main, 3)
    assert e.value.pe == 1


def test_heap_too_small_is_reported_naming_the_variable(monkeypatch):
    monkeypatch.setenv("RSHMEM_SIM_HEAP", "8M")

    def pe_main():
        rshmem.empty(64 << 20, "u8")

    with pytest.raises(rshmem.RshmemError, match="RSHMEM_SIM_HEAP"):
        run(pe_main, 2)
