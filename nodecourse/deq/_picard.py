"""Picard (fixed-point) iteration z_{k+1} = z_k + damping * (f(z_k) - z_k)."""

from __future__ import annotations

from typing import Callable

import torch

from nodecourse.deq._settings import check_method_call
from nodecourse.deq._tracking import Tracker


def picard(
    F: Callable[[torch.Tensor], torch.Tensor],
    z0: torch.Tensor,
    tracker: Tracker,
    *,
    max_iter: int,
    damping: float = 1.0,
) -> dict:
    """Iterate ``z <- z + damping * (F(z) - z)`` on ``z0`` ``(B, D)`` until the tracker is done.

    ``damping = 1`` is plain Picard iteration; ``damping < 1`` (Krasnoselskii-Mann) converges
    for some maps where plain Picard cycles, e.g. z -> 1 - z. Returns extra stats (none).
    """
    damping = check_method_call(picard, max_iter, damping=damping)["damping"]
    z = z0
    for _ in range(max_iter):
        g = tracker.observe(z, F(z))
        if tracker.done:
            break
        z = torch.where(tracker.active[:, None], z + damping * g, z)
    return {}
