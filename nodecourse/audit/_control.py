"""Solves of a controlled differential equation: the field of a CDE, its control path's interval, and
whether a stretched horizon runs past the path's data.

``torchcde.cdeint`` and :func:`nodecourse.cde.cdeint` both reduce ``dz = f(t, z) dX(t)`` to an ODE
solve whose field holds the path as ``field.X`` (torchcde's ``_VectorField``, the library's
:class:`~nodecourse.cde.CDEField`): the hook sees a ``torchdiffeq`` or ``nodecourse.odeint`` solve,
and this module tells the audit it is a CDE. Past the path's last knot the interpolation is
extrapolated (its end piece continued), so the control the longer horizon feeds the field is no
longer observed data; where the path has no ``interval`` the audit can read, it says so rather
than guess.
"""

from __future__ import annotations

import math


def cde_library(func) -> str | None:
    """``"torchcde.cdeint"`` or ``"nodecourse.cde.cdeint"`` when ``func`` (a solve's field) is the field
    one of them builds, else ``None``."""
    module = type(func).__module__
    if module.startswith("torchcde"):
        return "torchcde.cdeint"
    if module.startswith("nodecourse.cde"):
        return "nodecourse.cde.cdeint"
    return None


def control_interval(func) -> tuple[float, float] | None:
    """``(first knot, last knot)`` of a CDE field's control path (``func.X.interval``, shape ``(2,)``),
    or ``None`` when it cannot be read (no path, no interval, not two finite times)."""
    try:
        interval = func.X.interval
        lo, hi = float(interval[0]), float(interval[-1])
    except Exception:  # any path without a readable interval: the caller says "not known"
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return min(lo, hi), max(lo, hi)


def past_the_data(call, factor: float) -> dict:
    """Where the grid of ``call`` (a CDE solve's :class:`~nodecourse.audit._hook.SolveCall`), stretched
    ``factor`` times about its first time, ends against its control path's knots.

    Returns ``{"solve", "library", "interval" ([first, last] or None), "end", "extrapolated"
    (True, False or None: not known), "sentence"}``."""
    grid = call.grid or [0.0, 0.0]
    end = grid[0] + (grid[-1] - grid[0]) * factor
    span = control_interval(call.func)
    name = call.name or call.site
    out = {"solve": name, "library": cde_library(call.func), "interval": None, "end": end, "extrapolated": None}
    label = f"horizon x{factor:g}"
    if span is None:
        out["sentence"] = (
            f"{name}: whether the {label} (grid to t={end:.4g}) runs past the interpolation's last knot is "
            "not known (its control path has no interval the audit can read); past that knot the path would "
            "be extrapolated, not observed"
        )
        return out
    lo, hi = span
    out["interval"] = [lo, hi]
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))  # a grid ending on the knot is not past it
    out["extrapolated"] = end > hi + tol or end < lo - tol
    if out["extrapolated"]:
        out["sentence"] = (
            f"{name}: the {label} runs past the interpolation's last knot (grid to t={end:.4g}, knots "
            f"t={lo:.4g} to {hi:.4g}): from there the control path is the interpolation extrapolated beyond its "
            "last observation, not observed data"
        )
    else:
        out["sentence"] = (
            f"{name}: the {label} stays within the interpolation's knots (grid to t={end:.4g}, last knot "
            f"t={hi:.4g}): the control path is observed throughout"
        )
    return out


__all__ = ["cde_library", "control_interval", "past_the_data"]
