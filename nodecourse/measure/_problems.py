"""Test problems for the solvers, with independent references from scipy.

Each :class:`Problem` has its field in torch (any device and dtype) and in
numpy (for scipy's reference solve). Used by lesson 2, the solver explorer
widget and the tests::

    from nodecourse.measure import PROBLEMS, reference_solution
    vdp = PROBLEMS["van der pol (μ=2)"]
    ys_ref = reference_solution(vdp, np.linspace(0, vdp.t1, 50))   # (50, 2)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch


@dataclass(frozen=True)
class Problem:
    """A test problem: ``f(t, y)`` in torch (any device/dtype), the same in numpy for the reference.

    ``y0``: initial state; ``t1``: end time (start 0); ``labels``: one per state component;
    ``n_out``: output times the explorer uses (the implicit methods step to each, so stiff problems use few);
    ``stiff``: the reference uses Radau instead of DOP853.
    """

    name: str
    f_torch: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    f_numpy: Callable[[float, np.ndarray], np.ndarray]
    y0: tuple[float, ...]
    t1: float
    labels: tuple[str, ...]
    n_out: int = 200
    stiff: bool = False


def _vdp_torch(t, y, mu=2.0):
    return torch.stack([y[..., 1], mu * (1 - y[..., 0] ** 2) * y[..., 1] - y[..., 0]], dim=-1)


def _vdp_numpy(t, y, mu=2.0):
    return np.array([y[1], mu * (1 - y[0] ** 2) * y[1] - y[0]])


def _stiff_torch(t, y):
    return -1000.0 * (y - torch.cos(torch.as_tensor(t, dtype=y.dtype, device=y.device)))


def _stiff_numpy(t, y):
    return -1000.0 * (y - np.cos(t))


PROBLEMS = {
    "van der pol (μ=2)": Problem(
        "van der pol (μ=2)", _vdp_torch, _vdp_numpy, (2.0, 0.0), 10.0, ("position y₁", "velocity y₂")
    ),
    "stiff: y' = -1000 (y - cos t)": Problem(
        "stiff: y' = -1000 (y - cos t)", _stiff_torch, _stiff_numpy, (0.0,), 1.0, ("y",), n_out=41, stiff=True
    ),
}

_REFERENCE_CACHE: dict[tuple[str, int, float, float], np.ndarray] = {}


def reference_solution(problem: Problem, ts: np.ndarray) -> np.ndarray:
    """The reference at times ``ts`` (from 0), shape ``(len(ts), dim)``: scipy's DOP853 (Radau for
    stiff problems) at rtol = atol = 1e-12, independent of nodecourse. Cached per problem and grid."""
    from scipy.integrate import solve_ivp

    ts = np.asarray(ts, dtype=float)
    key = (problem.name, len(ts), float(ts[0]), float(ts[-1]))
    if key not in _REFERENCE_CACHE:
        sol = solve_ivp(
            problem.f_numpy,
            (0.0, float(ts[-1])),
            np.array(problem.y0),
            t_eval=ts,
            method="Radau" if problem.stiff else "DOP853",
            rtol=1e-12,
            atol=1e-12,
        )
        if not sol.success:  # pragma: no cover - scipy failing here would be a bug in this module
            raise RuntimeError(f"reference solve failed for {problem.name!r}: {sol.message}")
        _REFERENCE_CACHE[key] = sol.y.T
    return _REFERENCE_CACHE[key]


__all__ = ["PROBLEMS", "Problem", "reference_solution"]
