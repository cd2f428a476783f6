"""rshmem's graphs from Python: work recorded once, launched many times."""

import numpy as np

import rshmem
from conftest import run


def test_a_captured_all_reduce_runs_at_each_launch(npes):
    def pe_main():
        x = rshmem.empty(16, "f32")
        x[...] = 1
        rshmem.all_reduce(x)  # once eagerly: the stream's workspace is made then
        graph = rshmem.capture(lambda: rshmem.all_reduce(x))
        assert graph.operations >= 1
        assert x.tolist() == [npes] * 16  # recorded, not run
        for _ in range(3):
            graph.launch()
        rshmem.synchronize()
        return x.copy()

    for got in run(pe_main, npes):
        assert got.tolist() == [npes ** 4] * 16


def test_an_exception_in_the_captured_function_propagates():
    def pe_main():
        def body():
            raise KeyError("inside capture")

        try:
            rshmem.capture(body)
        except KeyError as e:
            return str(e)

    assert run(pe_main, 1) == ["'inside capture'"]
