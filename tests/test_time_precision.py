"""Times finer than the state's dtype: refused by name when the cast to that dtype would move them
(the field reads t in y0's dtype); accepted when the rounding is below the state's precision."""

from __future__ import annotations

import math

import pytest
import torch

from nodecourse.solvers import odeint


def cos_t(t, y):
    return torch.cos(t).expand_as(y)


def test_times_the_state_dtype_cannot_hold_are_refused_by_name():
    # over [1e8, 1e8 + 1] float32 rounds the times by up to 4: cos t would be integrated at wrong times
    t = torch.tensor([1e8, 1e8 + 1], dtype=torch.float64)
    with pytest.raises(ValueError, match=r"t has dtype torch.float64.*float32.*t - t\[0\]"):
        odeint(cos_t, torch.zeros(1), t)


def test_the_suggested_fixes_give_the_right_answer():
    t0 = 1e8
    exact = math.sin(t0 + 1) - math.sin(t0)  # y(t0 + 1) - y(t0) for y' = cos t
    t = torch.tensor([t0, t0 + 1], dtype=torch.float64)
    in_float64 = odeint(cos_t, torch.zeros(1, dtype=torch.float64), t, rtol=1e-10, atol=1e-12).ys[-1]
    assert float(in_float64) == pytest.approx(exact, abs=1e-6)
    # shifted: the float32 field reads s = t - t0 in [0, 1] and adds t0 back in float64
    shifted = odeint(
        lambda s, y: torch.cos(s.double() + t0).to(y.dtype).expand_as(y),
        torch.zeros(1),
        (t - t0).float(),
        rtol=1e-6,
        atol=1e-7,
    ).ys[-1]
    assert float(shifted) == pytest.approx(exact, abs=1e-5)


def test_a_fine_t_near_zero_is_accepted():
    # 0.1 is not a float32, but the rounding (1.5e-9) is far below float32's precision on [0, 1]
    t = torch.linspace(0, 1, 11, dtype=torch.float64)
    ys = odeint(cos_t, torch.zeros(1), t, rtol=1e-6, atol=1e-7).ys
    assert float(ys[-1]) == pytest.approx(math.sin(1.0), abs=1e-6)
