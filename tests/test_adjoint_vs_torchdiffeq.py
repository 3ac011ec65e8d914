"""Issue 38: wherever torchdiffeq's ``odeint_adjoint`` returns a gradient, the course's adjoint returns one
too, within the criterion declared in :mod:`nodecourse.measure.adjoint_sweep` (at most 10x torchdiffeq's
relative error, or at most 100 x max(rtol, eps)), on a sub-grid of the benchmark's sweep."""

from __future__ import annotations

import pytest

pytest.importorskip("torchdiffeq")

from nodecourse.measure.adjoint_sweep import (  # noqa: E402
    TEST_GRID,
    TEST_GRID_FLOAT32,
    judge,
    measure,
)

SETTINGS = list(TEST_GRID.settings()) + list(TEST_GRID_FLOAT32.settings())


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: "-".join(str(v) for v in s))
def test_ours_succeeds_where_torchdiffeqs_does(setting):
    row = measure(*setting)
    assert judge(row) == "", judge(row)
    if row.ours == "refused":  # tolerances float32 cannot resolve: refused before any solve, by name
        assert setting[1] == "float32" and "can resolve" in row.ours_note


def test_lesson_4s_setting_is_one_torchdiffeq_also_passes():
    # the case: torchdiffeq's adjoint returns the right gradient at rtol 1e-4, atol 1e-20, T = 0.5
    row = measure("decay-10", "float64", 1e-4, 1e-20, 0.5)
    assert row.theirs == "ok" and row.ours == "ok" and row.ours_error < 1e-3


@pytest.mark.xfail(
    strict=True,
    reason="known miss (issue 38): float32, rotated, rtol 1e-3, atol 1e-20: the parameter-gradient entry "
    "dL/dlam starts at 0 and its slope is float32 rounding noise, so no step passes a 1e-20 atol and the "
    "backward solve ends MAX_STEPS; torchdiffeq's passes (its float32 time grid forces larger steps). "
    "adjoint_options={'atol': 1e-12} or {'norm': 'seminorm'} succeed (measured)",
)
def test_known_float32_miss():
    row = measure("decay-10-rotated", "float32", 1e-3, 1e-20, 0.5, max_steps=2_000)
    assert judge(row) == "", judge(row)
