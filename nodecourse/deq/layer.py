"""``DEQ``: a deep equilibrium layer z* = f(z*, x), differentiated implicitly or by unrolling.

Implicit differentiation (the implicit function theorem): at z* = f(z*, x),

    dL/dθ = y ∂f/∂θ,   where y solves   y = y ∂f/∂z + dL/dz*     (a row vector, i.e. VJPs)

so the backward pass is a second fixed-point solve, on vector-Jacobian products of one
application of f at z*. Nothing of the forward iterations is stored: memory does not grow
with the number of forward iterations. Unrolled differentiation instead backpropagates
through every recorded iteration (memory grows with their number); truncated to a few
steps it becomes a weight-tied network of that depth.
"""
from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from nodecourse.deq.fixed_point import METHODS, FixedPointResult, check_settings, fixed_point
from nodecourse.deq.regularizer import jacobian_regularizer

BACKWARDS = ("implicit", "unrolled")


def implicit_backward_hook(f_z: torch.Tensor, z: torch.Tensor, *, solve: Callable[..., FixedPointResult],
                           record: Callable[[FixedPointResult], None] | None = None) -> Callable:
    """The gradient hook of implicit differentiation, for ``f_z = f(z, x)`` with ``z`` the detached
    fixed point (a leaf that requires grad).

    Register it on an alias of ``f_z`` (``out = f_z.view_as(f_z)``), which the layer returns: it
    replaces the incoming gradient g by the solution y of y = y ∂f/∂z + g (found by
    ``solve(map, y0)``, here ``fixed_point``); autograd then carries y on through ``f_z``'s graph
    to the parameters and x. The VJPs y ∂f/∂z start at ``f_z`` itself, so they do not pass
    through the alias and do not fire the hook again (nor does a Jacobian regulariser built on
    ``f_z`` and ``z``).
    """

    def hook(grad: torch.Tensor | None) -> torch.Tensor | None:
        if grad is None:  # an undefined gradient (nothing downstream depends on the output)
            return None

        def vjp_map(y: torch.Tensor) -> torch.Tensor:
            (yJ,) = torch.autograd.grad(f_z, z, y, retain_graph=True)
            return yJ + grad

        result = solve(vjp_map, grad)
        if record is not None:
            record(result)
        return result.z

    return hook


class DEQ(nn.Module):
    """Deep equilibrium layer over a field ``f(z, x)``: ``forward(x, z0=None)`` returns z* = f(z*, x).

    Args:
        f: the field, an ``nn.Module`` (its parameters are registered) or a callable, mapping
            ``z`` ``(B, ...)`` and ``x`` to the shape of ``z``, each sample independently.
        solver: forward method, ``"anderson"`` (default), ``"broyden"`` or ``"picard"``.
        tol, max_iter, stop_mode: forward stopping criterion (see :func:`nodecourse.fixed_point`).
        backward: ``"implicit"`` (default; a backward fixed-point solve) or ``"unrolled"``
            (backprop through the recorded forward iterations; with ``max_iter=k`` and a ``tol``
            never reached, the same block truncated to k unrolled steps).
        backward_solver, backward_tol, backward_max_iter: the backward solve's settings
            (default: the forward ones).
        solver_options: extra options of the forward (and backward) method, e.g. ``{"m": 6}``.
        state: how to start when ``z0`` is not given: an int width (zeros ``(B, state)``) or a
            callable ``x -> z0``.
        warn: warn when a solve does not reach its tolerance (off by default in training; the
            status is kept in :attr:`stats` either way).

    After each call :attr:`stats` holds the forward work (``forward_iters``, ``forward_residual``,
    ``forward_status``) and, once a backward pass has run, the backward work (``backward_iters``,
    ``backward_residual``, ``backward_status``); :attr:`forward_result` and :attr:`backward_result`
    hold the full :class:`FixedPointResult` objects.
    """

    def __init__(self, f: Callable[[torch.Tensor, torch.Tensor], torch.Tensor], *, solver: str = "anderson",
                 tol: float = 1e-4, max_iter: int = 50, backward: str = "implicit", stop_mode: str = "rel",
                 backward_solver: str | None = None, backward_tol: float | None = None,
                 backward_max_iter: int | None = None, solver_options: dict[str, Any] | None = None,
                 state: int | Callable[[torch.Tensor], torch.Tensor] | None = None, warn: bool = False):
        super().__init__()
        if not callable(f):
            raise TypeError(f"f must be an nn.Module or callable f(z, x), got {type(f).__name__}")
        if backward not in BACKWARDS:
            raise ValueError(f"backward={backward!r} is unknown; use one of {BACKWARDS}")
        self.solver_options = dict(solver_options or {})
        check_settings(solver, tol, max_iter, stop_mode, self.solver_options)
        self.backward_solver = backward_solver or solver
        self.backward_tol = backward_tol if backward_tol is not None else tol
        self.backward_max_iter = backward_max_iter if backward_max_iter is not None else max_iter
        check_settings(self.backward_solver, self.backward_tol, self.backward_max_iter, stop_mode,
                       self._options_for(self.backward_solver))
        if state is not None and not callable(state) and not (isinstance(state, int) and state > 0):
            raise ValueError(f"state={state!r} must be a positive int width or a callable x -> z0")
        self.f = f
        self.solver, self.tol, self.max_iter, self.stop_mode = solver, tol, max_iter, stop_mode
        self.backward = backward
        self.state = state
        self.warn = warn
        self.forward_result: FixedPointResult | None = None
        self.backward_result: FixedPointResult | None = None
        self.stats: dict[str, Any] = {}
        self._pair: tuple[torch.Tensor, torch.Tensor] | None = None

    def _options_for(self, method: str) -> dict[str, Any]:
        from nodecourse.deq.fixed_point import OPTIONS

        return {k: v for k, v in self.solver_options.items() if k in OPTIONS[method]}

    def initial_state(self, x: torch.Tensor) -> torch.Tensor:
        """z0 for input ``x`` from :attr:`state` (zeros of width ``state``, or ``state(x)``)."""
        if self.state is None:
            raise ValueError("DEQ.forward needs z0: pass forward(x, z0=...) or build DEQ(f, state=width)")
        if callable(self.state):
            return self.state(x)
        return torch.zeros(x.shape[0], self.state, dtype=x.dtype, device=x.device)

    def _solve(self, F, z0, *, method, tol, max_iter) -> FixedPointResult:
        return fixed_point(F, z0, method=method, tol=tol, max_iter=max_iter, stop_mode=self.stop_mode,
                           warn=self.warn, **self._options_for(method))

    def _record_backward(self, result: FixedPointResult) -> None:
        self.backward_result = result
        self.stats.update(backward_iters=result.n_iter, backward_residual=result.final_residual(),
                          backward_status=result.status.value)

    def forward(self, x: torch.Tensor, z0: torch.Tensor | None = None) -> torch.Tensor:
        """z* ``(B, ...)`` (shape of ``z0``) for input ``x``.

        Implicit mode with grad enabled returns f(z*, x), one application of f past the solver's
        iterate (it differs from z* by the final residual); without grad it returns the iterate.
        """
        z0 = self.initial_state(x) if z0 is None else z0

        def F(z):
            return self.f(z, x)

        self._pair = None
        if self.backward == "unrolled":
            result = self._solve(F, z0, method=self.solver, tol=self.tol, max_iter=self.max_iter)
            out = result.z
        else:
            with torch.no_grad():
                result = self._solve(F, z0, method=self.solver, tol=self.tol, max_iter=self.max_iter)
            z_star = result.z.detach()
            out = z_star
            if torch.is_grad_enabled():
                z_leaf = z_star.clone().requires_grad_()
                f_z = self.f(z_leaf, x)  # one application of f: the only graph kept for backward
                solve = lambda vjp_map, y0: self._solve(vjp_map, y0, method=self.backward_solver,  # noqa: E731
                                                        tol=self.backward_tol, max_iter=self.backward_max_iter)
                out = f_z.view_as(f_z)
                out.register_hook(implicit_backward_hook(f_z, z_leaf, solve=solve, record=self._record_backward))
                self._pair = (f_z, z_leaf)
        self.forward_result = result
        self.backward_result = None
        self.stats = dict(forward_iters=result.n_iter, forward_residual=result.final_residual(),
                          forward_status=result.status.value, backward_iters=None, backward_residual=None,
                          backward_status=None)
        return out

    def jacobian_loss(self, n_samples: int = 1, **kwargs) -> torch.Tensor:
        """Hutchinson estimate of ||∂f/∂z||_F² at the last forward's fixed point (mean over the batch),
        differentiable: add ``weight * deq.jacobian_loss()`` to the training loss (implicit mode only)."""
        if self._pair is None:
            raise RuntimeError("jacobian_loss needs a forward pass with backward='implicit' and grad enabled first")
        f_z, z = self._pair
        return jacobian_regularizer(f_z, z, n_samples, **kwargs)

    def extra_repr(self) -> str:
        return (f"solver={self.solver!r}, tol={self.tol:g}, max_iter={self.max_iter}, backward={self.backward!r}, "
                f"backward_solver={self.backward_solver!r}, backward_tol={self.backward_tol:g}")


__all__ = ["DEQ", "BACKWARDS", "implicit_backward_hook", "METHODS"]
