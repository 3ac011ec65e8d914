"""Peak memory of forward + backward: the measurement itself, and its shape in the number of steps."""
from __future__ import annotations

import pytest
import torch

from nodecourse.memory import cpu_peak_supported, measure_peak, memory_sweep

needs_peak = pytest.mark.skipif(not cpu_peak_supported(), reason="CPU peak memory needs Linux /proc/self/clear_refs")


@needs_peak
def test_measure_peak_sees_a_temporary_allocation():
    def hold_64_mib():
        x = torch.ones(16 * 2 ** 20)  # 64 MiB of float32, freed on return
        return float(x[0])

    peak = measure_peak(hold_64_mib)
    assert 60 * 2 ** 20 <= peak <= 80 * 2 ** 20, peak / 2 ** 20
    assert measure_peak(lambda: None) < 4 * 2 ** 20


def test_memory_sweep_checks_its_modes():
    with pytest.raises(ValueError, match=r"valid: \['backprop', 'checkpoint', 'adjoint'\]"):
        memory_sweep(modes=("backprop", "unrolled"))


@pytest.mark.slow
@needs_peak
def test_memory_shape_20_to_400_rk4_steps():
    """Batch 256, a 64-256-64 MLP field, rk4: backprop grows several-fold, the adjoint stays within
    20 %, checkpoint lies in between at every step count (shape, not time)."""
    sweep = memory_sweep(steps=(20, 50, 100, 200, 400), batch=256, dims=(64, 256, 64), method="rk4")
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
