"""Bookkeeping shared by the fixed-point solvers: residuals, the best iterate, convergence,
divergence and non-finite values, per sample of the batch.

Every solver calls :meth:`Tracker.observe` once per evaluation of ``f``; the tracker
records the residual trace and decides, sample by sample, which iterates are done.
The operations are plain tensor operations (``torch.where``), so a solve run with
gradients enabled can be backpropagated through (unrolled differentiation).
"""

from __future__ import annotations

import torch


class Tracker:
    """Residual trace and per-sample state of one batched fixed-point solve.

    Iterates are flattened to ``(B, D)``. ``stop_mode`` is ``"rel"`` or ``"abs"``.
    A sample is *done* once it converged (residual <= tol), diverged or produced a non-finite
    residual. It diverged when its absolute residual exceeds ``divergence_factor`` times its
    first one, or when ``||z||`` exceeds ``divergence_factor`` times the start's size
    ``max(||z0||, ||f(z0)||, 1)``: an iterate running off to infinity can have a small
    relative residual (``f(z) = z + atan(z - 1)`` at ``z = -4e14``: 4e-15) without being near
    a fixed point, so such an iterate never counts as converged.
    """

    def __init__(
        self,
        batch: int,
        *,
        tol: float,
        stop_mode: str,
        divergence_factor: float,
        dtype: torch.dtype,
        device: torch.device,
    ):
        self.tol = tol
        self.stop_mode = stop_mode
        self.divergence_factor = divergence_factor
        self.tiny = torch.finfo(dtype).tiny
        self.absolute: list[torch.Tensor] = []
        self.relative: list[torch.Tensor] = []
        self.best_z: torch.Tensor | None = None
        self.best_res = torch.full((batch,), float("inf"), dtype=dtype, device=device)
        self.best_abs = torch.full((batch,), float("inf"), dtype=dtype, device=device)
        self.best_iter = torch.zeros(batch, dtype=torch.long, device=device)
        self.first_abs: torch.Tensor | None = None
        self.abs_bound: torch.Tensor | None = None
        self.size_bound: torch.Tensor | None = None
        self.converged = torch.zeros(batch, dtype=torch.bool, device=device)
        self.diverged = torch.zeros(batch, dtype=torch.bool, device=device)
        self.non_finite = torch.zeros(batch, dtype=torch.bool, device=device)

    @property
    def active(self) -> torch.Tensor:
        """``(B,)`` bool: samples still iterating."""
        return ~(self.converged | self.diverged | self.non_finite)

    @property
    def done(self) -> bool:
        return not bool(self.active.any())

    def observe(self, z: torch.Tensor, fz: torch.Tensor) -> torch.Tensor:
        """Record the residual of iterate ``z`` (``(B, D)``) with ``fz = f(z)``; return ``g = fz - z``."""
        g = fz - z
        with torch.no_grad():
            a = g.detach().norm(dim=1)
            fz_size = fz.detach().norm(dim=1)
            r = a / (fz_size + self.tiny)
            size = z.detach().norm(dim=1)
            if self.first_abs is None:  # the bounds of divergence, from the start
                self.first_abs = a
                self.abs_bound = self.divergence_factor * a
                self.size_bound = self.divergence_factor * torch.maximum(size, fz_size).clamp_min(1.0)
        k = len(self.absolute)
        self.absolute.append(a)
        self.relative.append(r)
        res = r if self.stop_mode == "rel" else a
        active = self.active
        finite = torch.isfinite(res)
        improved = active & finite & (res < self.best_res)
        if self.best_z is None:
            self.best_z = z
        else:
            self.best_z = torch.where(improved[:, None], z, self.best_z)
        self.best_res = torch.where(improved, res, self.best_res)
        self.best_abs = torch.where(improved, a, self.best_abs)
        self.best_iter = torch.where(improved, torch.full_like(self.best_iter, k), self.best_iter)
        in_bounds = size <= self.size_bound  # an iterate that ran off never counts as converged
        self.converged = self.converged | (active & finite & in_bounds & (res <= self.tol))
        self.non_finite = self.non_finite | (active & ~finite)
        runaway = (a > self.abs_bound) | ~in_bounds
        self.diverged = self.diverged | (active & finite & runaway & ~self.converged)
        return g

    def stack(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The trace as two ``(n_iter, B)`` tensors (absolute, relative)."""
        return torch.stack(self.absolute), torch.stack(self.relative)
