"""Peak memory of forward + backward: the measurement itself, and its shape in the number of steps."""

from __future__ import annotations

import pytest
import torch

from nodecourse.measure import cpu_peak_supported, measure_peak, memory_sweep

needs_peak = pytest.mark.skipif(not cpu_peak_supported(), reason="CPU peak memory needs Linux /proc/self/clear_refs")


def _hold_64_mib():
    x = torch.ones(16 * 2**20)  # 64 MiB of float32, freed on return
    y = x * 2  # a second 64 MiB while x is alive: the peak is 128 MiB
    return float(y[0])


def test_profiler_peak_is_exact():
    assert abs(measure_peak(_hold_64_mib) - 128 * 2**20) < 1024  # the two tensors, plus a few scalar bytes
    assert measure_peak(lambda: None) == 0


@needs_peak
def test_rss_peak_sees_a_temporary_allocation():
    peak = measure_peak(_hold_64_mib, cpu_method="rss")
    assert 120 * 2**20 <= peak <= 140 * 2**20, peak / 2**20
    assert measure_peak(lambda: None, cpu_method="rss") < 4 * 2**20
    with pytest.raises(ValueError, match="cpu_method='vmstat' must be 'profiler' or 'rss'"):
        measure_peak(lambda: None, cpu_method="vmstat")


def test_memory_sweep_checks_its_modes():
    with pytest.raises(ValueError, match=r"valid: \['backprop', 'checkpoint', 'adjoint', 'reversible'\]"):
        memory_sweep(modes=("backprop", "unrolled"))


@pytest.mark.slow
def test_memory_shape_20_to_400_rk4_steps():
    """Batch 256, a 64-256-64 MLP field, rk4: backprop grows several-fold, the adjoint stays within
    20 %, checkpoint lies in between at every step count (shape, not time). The ledger row's ends,
    20 and 400 steps, and one count between them (lesson 4's full sweep adds 50 and 200)."""
    sweep = memory_sweep(steps=(20, 100, 400), batch=256, dims=(64, 256, 64), method="rk4")
    back, ck, adj = sweep.peaks("backprop"), sweep.peaks("checkpoint"), sweep.peaks("adjoint")
    assert sweep.growth("backprop") >= 3.0, sweep.table()
    assert all(b2 > b1 for b1, b2 in zip(back, back[1:])), sweep.table()  # grows with every step count
    assert max(adj) <= 1.2 * min(adj), sweep.table()
    assert all(a <= c <= b for a, c, b in zip(adj, ck, back)), sweep.table()
    assert ck[-1] < 0.25 * back[-1], sweep.table()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_memory_shape_on_cuda():
    sweep = memory_sweep(steps=(20, 80), device="cuda")
    assert sweep.growth("backprop") >= 3.0 and sweep.growth("adjoint") <= 1.2, sweep.table()
