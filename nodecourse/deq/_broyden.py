"""Broyden's ("good") method on g(z) = f(z) - z = 0, with a limited-memory inverse Jacobian.

The inverse Jacobian of g is approximated by B = -I + sum_i u_i v_i^T (start: -I, so the
first step is a Picard step). Each step z <- z - damping * B g, then the rank-one update

    B <- B + (dz - B dg) (dz^T B) / (dz^T B dg)

keeps B dg = dz (the secant condition). After ``m`` updates the memory is cleared and the
method restarts from -I at the current iterate (dropping only the oldest updates instead
breaks the secant chain and can diverge). A sample whose residual rises above
``safeguard`` times its best (default 1e4: Broyden's residual is far from monotone, and
clearing the memory at every bump throws away what it learnt) has its memory cleared too.
Both count as resets.
"""

from __future__ import annotations

from typing import Callable

import torch

from nodecourse.deq._settings import check_method_call
from nodecourse.deq._tracking import Tracker


def _apply(U: list[torch.Tensor], V: list[torch.Tensor], x: torch.Tensor, transpose: bool = False) -> torch.Tensor:
    """B x (or x^T B as a vector when ``transpose``) for B = -I + sum u_i v_i^T; x ``(B, D)``."""
    out = -x
    for u, v in zip(U, V):
        if transpose:
            out = out + (u * x).sum(dim=1, keepdim=True) * v
        else:
            out = out + (v * x).sum(dim=1, keepdim=True) * u
    return out


def broyden(
    F: Callable[[torch.Tensor], torch.Tensor],
    z0: torch.Tensor,
    tracker: Tracker,
    *,
    max_iter: int,
    m: int = 50,
    damping: float = 1.0,
    safeguard: float = 1e4,
) -> dict:
    """Broyden iteration on ``z0`` ``(B, D)`` until the tracker is done. Returns ``{"resets": int}``."""
    checked = check_method_call(broyden, max_iter, m=m, damping=damping, safeguard=safeguard)
    m, damping, safeguard = checked["m"], checked["damping"], checked["safeguard"]
    U: list[torch.Tensor] = []
    V: list[torch.Tensor] = []
    resets = 0
    tiny = torch.finfo(z0.dtype).tiny
    z = z0
    g = tracker.observe(z, F(z))
    for _ in range(max_iter - 1):
        if tracker.done:
            break
        active = tracker.active[:, None]
        z_new = torch.where(active, z - damping * _apply(U, V, g), z)
        g_new = tracker.observe(z_new, F(z_new))
        dz, dg = z_new - z, g_new - g
        Bdg = _apply(U, V, dg)
        dzB = _apply(U, V, dz, transpose=True)
        denom = (dz * Bdg).sum(dim=1, keepdim=True)
        usable = active & torch.isfinite(denom) & (denom.abs() > tiny**0.5)
        safe = torch.where(usable, denom, torch.ones_like(denom))
        u = torch.where(usable, (dz - Bdg) / safe, torch.zeros_like(dz))
        v = torch.where(usable, dzB, torch.zeros_like(dz))
        with torch.no_grad():
            res = tracker.relative[-1] if tracker.stop_mode == "rel" else tracker.absolute[-1]
            reset = tracker.active & (res > safeguard * tracker.best_res)
        if bool(reset.any()):
            resets += int(reset.sum())
            keep = (~reset)[:, None].to(z0.dtype)
            U = [ui * keep for ui in U]
            u = u * keep
        if len(U) >= m:
            U, V = [], []
            resets += int(tracker.active.sum())
        else:
            U.append(u)
            V.append(v)
        z, g = z_new, g_new
    return {"resets": resets}
