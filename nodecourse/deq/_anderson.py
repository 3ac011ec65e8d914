"""Anderson acceleration (type II, windowed), robust at small residuals and near spectral radius 1.

Given the last ``n <= m`` iterates x_i and residuals g_i = f(x_i) - x_i, choose weights
alpha (summing to one) that minimise ||sum_i alpha_i g_i||, then step to

    x_next = sum_i alpha_i (x_i + damping * g_i).

The weights solve the normal equations (G G^T + lam * s * I) a = 1, alpha = a / sum(a),
where ``s`` is the mean squared residual norm in the window. Scaling the Tikhonov term
by ``s`` keeps the solve scale-free: a fixed ``lam`` (as in many implementations) swamps
G G^T once the residuals are tiny (||g||^2 ~ 1e-16 at 1e-8), the weights collapse to
a plain average and the iteration stalls just above the tolerance.

Safeguard: when a sample's residual rises above ``safeguard`` times its best, its
history is cleared (a restart), so a bad extrapolation near spectral radius 1 cannot
poison later steps. Restarts are counted in the stats.
"""

from __future__ import annotations

from typing import Callable

import torch

from nodecourse.deq._settings import check_method_call
from nodecourse.deq._tracking import Tracker

__all__ = ["anderson_weights"]


def anderson_weights(G: torch.Tensor, valid: torch.Tensor, lam: float) -> torch.Tensor:
    """Mixing weights for residual history ``G`` ``(B, n, D)`` with mask ``valid`` ``(B, n)`` (bool).

    Returns ``alpha`` ``(B, n)``: zero on invalid entries, summing to one over valid ones,
    minimising ||sum_i alpha_i G_i|| with a relative Tikhonov term ``lam``. A sample whose
    system cannot be solved gets all weight on its newest valid entry (a Picard step).
    """
    B, n, _ = G.shape
    V = valid.to(G.dtype)
    gram = torch.bmm(G, G.transpose(1, 2)) * (V[:, :, None] * V[:, None, :])
    diag = torch.diagonal(gram, dim1=1, dim2=2)
    scale = (diag.sum(dim=1) / V.sum(dim=1).clamp_min(1)).clamp_min(torch.finfo(G.dtype).tiny)
    eye = torch.eye(n, dtype=G.dtype, device=G.device)
    reg = torch.where(valid, lam * scale[:, None], torch.ones_like(V))
    H = gram + eye[None] * reg[:, :, None]
    a = torch.linalg.solve(H, V[:, :, None])[:, :, 0]
    alpha = a / a.sum(dim=1, keepdim=True)
    # fall back to the newest valid entry where the solve failed (e.g. a sample already frozen)
    newest = torch.zeros_like(alpha)
    last_valid = (torch.arange(n, device=G.device)[None] * valid.long()).argmax(dim=1)
    newest[torch.arange(B, device=G.device), last_valid] = 1.0
    ok = torch.isfinite(alpha).all(dim=1, keepdim=True)
    return torch.where(ok, alpha, newest)


def anderson(
    F: Callable[[torch.Tensor], torch.Tensor],
    z0: torch.Tensor,
    tracker: Tracker,
    *,
    max_iter: int,
    m: int = 6,
    lam: float | None = None,
    damping: float = 1.0,
    safeguard: float = 1e2,
) -> dict:
    """Anderson-accelerated iteration on ``z0`` ``(B, D)``, window ``m``, until the tracker is done.

    ``lam`` defaults to sqrt(machine epsilon) of the dtype (1.5e-8 in float64, 3.5e-4 in
    float32). Returns ``{"restarts": int}``.
    """
    checked = check_method_call(anderson, max_iter, m=m, lam=lam, damping=damping, safeguard=safeguard)
    m, lam, damping, safeguard = checked["m"], checked["lam"], checked["damping"], checked["safeguard"]
    if lam is None:
        lam = float(torch.finfo(z0.dtype).eps) ** 0.5
    X: list[torch.Tensor] = []
    G: list[torch.Tensor] = []
    valid: list[torch.Tensor] = []
    restarts = 0
    z = z0
    for _ in range(max_iter):
        g = tracker.observe(z, F(z))
        if tracker.done:
            break
        with torch.no_grad():
            res = tracker.relative[-1] if tracker.stop_mode == "rel" else tracker.absolute[-1]
            restart = tracker.active & (res > safeguard * tracker.best_res)
        if bool(restart.any()):
            restarts += int(restart.sum())
            valid = [v & ~restart for v in valid]
        X.append(z)
        G.append(g)
        valid.append(torch.ones_like(tracker.active))
        if len(X) > m:
            X.pop(0), G.pop(0), valid.pop(0)
        Xs, Gs = torch.stack(X, dim=1), torch.stack(G, dim=1)
        alpha = anderson_weights(Gs, torch.stack(valid, dim=1), lam)
        z_next = torch.einsum("bn,bnd->bd", alpha, Xs + damping * Gs)
        z = torch.where(tracker.active[:, None], z_next, z)
    return {"restarts": restarts}
