"""``cdeint``: solve a controlled differential equation by reducing it to :func:`nodecourse.odeint`.

The CDE ``dz = f(t, z) dX(t)`` (Kidger et al. 2020) driven by a differentiable path ``X`` is the ODE
``dz/dt = f(t, z) dX/dt``: ``f(t, z)`` is a matrix ``(hidden, channels)`` applied to the path's
velocity ``(channels,)``. Everything :func:`~nodecourse.odeint` offers (methods, gradient routes,
``Solution`` with its work counts and status) therefore carries over.
"""

from __future__ import annotations

import torch
from torch import nn

from nodecourse.solvers import FIXED, REVERSIBLE_SOLVERS, Solution, odeint, spec_for

__all__ = ["CDEField", "cdeint", "smallest_spacing"]


class CDEField(nn.Module):
    """The ODE field ``g(t, z) = f(t, z) @ dX/dt(t)`` of the CDE driven by ``X``.

    An ``nn.Module`` holding ``X`` and ``func`` as attributes, so the no-graph gradient routes of
    ``odeint`` (``"checkpoint"``, ``"adjoint"``) find what they must differentiate: ``func``'s
    parameters (or the tensors its closure holds) and ``X``'s coefficient buffers when they
    require grad (see :mod:`nodecourse.solvers._dependencies`).

    Args:
        X: the path: any object with ``derivative(t) -> (..., channels)`` (this package's
            interpolations, or torchcde's).
        func: ``func(t, z) -> (..., hidden, channels)`` for ``z`` of shape ``(..., hidden)``.
    """

    def __init__(self, X, func):
        super().__init__()
        self.X = X
        self.func = func

    def forward(self, t: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        velocity = self.X.derivative(t)
        matrix = self.func(t, z)
        _check_shapes(matrix, velocity, z)
        # (..., hidden, channels) @ (..., channels, 1): one matrix-vector product per batch element
        return (matrix @ velocity.unsqueeze(-1)).squeeze(-1)


def _check_shapes(matrix, velocity, z: torch.Tensor) -> None:
    """Shapes of one evaluation (tuple comparisons only: no device sync), each clash named."""
    if not isinstance(velocity, torch.Tensor) or velocity.dim() < 1:
        raise ValueError(
            f"X.derivative(t) must return a tensor of shape (..., channels), got "
            f"{getattr(velocity, 'shape', type(velocity).__name__)}"
        )
    batch, hidden, channels = tuple(z.shape[:-1]), z.shape[-1], velocity.shape[-1]
    try:
        broadcast = tuple(torch.broadcast_shapes(tuple(velocity.shape[:-1]), batch))
    except RuntimeError:
        broadcast = None
    if broadcast != batch:
        raise ValueError(
            f"X.derivative(t) has shape {tuple(velocity.shape)}: its batch dimensions "
            f"{tuple(velocity.shape[:-1])} must match z0's {batch} (z0 has shape (..., hidden) = {tuple(z.shape)}); "
            f"build X from data of shape (*z0.shape[:-1], length, channels)"
        )
    expected = (*batch, hidden, channels)
    if not isinstance(matrix, torch.Tensor) or tuple(matrix.shape) != expected:
        got = tuple(matrix.shape) if isinstance(matrix, torch.Tensor) else type(matrix).__name__
        raise ValueError(
            f"func(t, z) must return shape (*batch, hidden, channels) = {expected} (batch {batch} and hidden "
            f"{hidden} from z0's shape {tuple(z.shape)}, channels {channels} from X.derivative(t)); got {got}. "
            f"End func with .view(*z.shape[:-1], {hidden}, {channels})"
        )


def _fixed_step(method) -> bool:
    """Whether ``method`` takes fixed steps only (needs ``step_size``); an unknown one is left to odeint."""
    if isinstance(method, str) and method in REVERSIBLE_SOLVERS:
        return True
    try:
        return spec_for("dopri5" if method is None else method).kind == FIXED
    except (TypeError, ValueError):
        return False


def smallest_spacing(X) -> float:
    """The smallest gap between ``X.grid_points`` (a float): the default step of the fixed-step methods."""
    knots = getattr(X, "grid_points", None)
    if not isinstance(knots, torch.Tensor) or knots.numel() < 2:
        raise ValueError(
            "cdeint: a fixed-step method needs step_size=..., and X has no grid_points to default it from "
            "(the smallest gap between its knots); give step_size"
        )
    return float((knots[1:] - knots[:-1]).min())


def cdeint(X, func, z0: torch.Tensor, t: torch.Tensor, *, method="dopri5", step_size=None, **odeint_kwargs) -> Solution:
    """Solve ``dz = func(t, z) dX(t)``, ``z(t[0]) = z0``, as the ODE ``dz/dt = func(t, z) @ dX/dt(t)``.

    Args:
        X: the control path, e.g. :class:`~nodecourse.cde.LinearInterpolation` or
            :class:`~nodecourse.cde.CubicSpline` (anything with ``derivative(t) -> (..., channels)``;
            ``grid_points`` for the default step).
        func: ``func(t, z) -> (..., hidden, channels)``, ``z`` of shape ``(..., hidden)``; a function or
            ``nn.Module``. A wrong shape raises ``ValueError`` naming ``func`` and the shape expected.
        z0: the initial state, shape ``(..., hidden)`` (``...``: the batch dimensions of ``X``).
        t: output times, shape ``(T,)``, inside ``X.interval`` (``X.interval`` itself for the final state;
            ``X.grid_points`` for the state at every observation).
        method: as :func:`nodecourse.odeint`.
        step_size: fixed-step methods (``"euler"``, ``"rk4"``, ``"rk38"``, ...): default the smallest
            gap between ``X.grid_points`` (torchcde leaves it to ``options=dict(step_size=...)``, which
            is also accepted). Each output interval is split into equal steps of at most this size.
        **odeint_kwargs: passed to :func:`nodecourse.odeint`: ``rtol``, ``atol``, ``gradient``
            (``"backprop"``, ``"checkpoint"``, ``"adjoint"``: all three differentiate ``func``'s
            parameters and ``X``'s coefficient tensors when those require grad), ``options``, ...
            ``per_sample`` is refused (``X.derivative`` takes one time for the whole batch).

    Returns:
        the :class:`~nodecourse.Solution`: ``ys`` of shape ``(T, ..., hidden)`` (time first, as
        ``odeint``'s; torchcde's ``cdeint`` puts time second to last: ``sol.ys.movedim(0, -2)``),
        ``stats`` (``nfe`` counts evaluations of ``func``), ``status``.

    Kinks: ``dX/dt`` jumps at the knots of a linear path (its derivative at those of a cubic one).
    ``odeint`` has no jump or grid times (torchdiffeq's ``jump_t`` / ``grid_points``): an adaptive
    method meets each kink inside a step, rejects it and shrinks its step there, which costs
    evaluations but not accuracy. At a knot ``X.derivative`` is the left piece's (torchcde's
    convention), so on a linear path a fixed step that starts on a knot sees the previous piece's
    slope in its first stage (an error of order ``h`` per knot, as in torchcde); the cubic paths have
    a continuous ``dX/dt`` and no such error: there a fixed-step method whose steps end on the knots
    (``step_size`` dividing every gap) keeps its order. The adjoint's gradient of one piece's
    coefficients integrates a function that jumps at that piece's knots: adaptive steps straddling
    the jumps make it the least accurate part of the gradient (steps ending on the knots, or the
    gradient of the observations the coefficients came from, do not have this problem).
    Default tolerances are ``odeint``'s (``rtol=1e-7``, ``atol=1e-9``), tighter than torchcde's
    (``1e-4``, ``1e-6``).
    """
    if not callable(getattr(X, "derivative", None)):
        raise TypeError(
            f"cdeint: X must be a path with a derivative(t) method (e.g. CubicSpline(coeffs)), got {type(X).__name__}"
        )
    if not callable(func):
        raise TypeError(f"cdeint: func must be callable as func(t, z), got {type(func).__name__}")
    if not isinstance(z0, torch.Tensor) or z0.dim() < 1:
        raise ValueError(
            f"cdeint: z0 must be a tensor of shape (..., hidden), got {getattr(z0, 'shape', type(z0).__name__)}"
        )
    if odeint_kwargs.get("per_sample"):
        raise ValueError(
            "cdeint: per_sample=True is not supported: X.derivative(t) takes one time for the whole batch; "
            "drop per_sample"
        )
    options = odeint_kwargs.get("options")
    given = step_size is not None or (isinstance(options, dict) and "step_size" in options)
    if not given and _fixed_step(method):
        step_size = smallest_spacing(X)
    return odeint(CDEField(X, func), z0, t, method=method, step_size=step_size, **odeint_kwargs)
