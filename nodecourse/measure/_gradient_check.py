"""Gradient validation on a small controlled problem with an analytic gradient.

The problem (:class:`DecayFeed`): a fast decaying mode feeds a slow one,

    dz1/dt = lam * z1,    dz2/dt = theta * z1,     L = z2(T),

with ``z(0) = (z10, z20)``. In closed form ``z1(t) = z10 e^{lam t}`` and
``z2(T) = z20 + theta z10 (e^{lam T} - 1) / lam``, so every gradient is known. With
``lam < 0`` the forward flow contracts ``z1``: the adjoint, which recomputes ``z1`` by
solving backwards from ``z1(T)``, multiplies the forward error in ``z1(T)`` by
``e^{-lam T}``, and ``dL/dtheta = int_0^T z1 dt`` inherits it. Checkpointing keeps the
forward states and does not.

``angle`` rotates the same system: the state is ``w = Q z`` with ``Q`` the rotation by
``angle`` in the plane, so each coordinate of ``w`` mixes the fast mode with the slow one.
``L`` and every gradient are unchanged (``L = (Q^T w(T))_2``), but a relative error
control on ``w`` no longer sees the decayed mode on its own: with ``angle = 0`` a tiny
``atol`` keeps ``z1`` accurate relative to itself and the adjoint's drift disappears;
rotated, it does not.

:func:`gradient_table` computes ``dL/d(z10, z20, lam, theta, T)`` by every available
route (analytic, central finite differences, backprop, adjoint, checkpoint, torchdiffeq's
``odeint_adjoint``) and returns one row per route with its error against the analytic
gradient and its solver work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
from torch import nn

from nodecourse.solvers import SOLVERS, SolverError, odeint

__all__ = [
    "ROUTES",
    "NAMES",
    "DecayFeed",
    "analytic_gradient",
    "GradientRow",
    "GradientTable",
    "gradient_table",
    "theta_error",
    "gradient_error_sweep",
]

ROUTES = ("analytic", "finite_differences", "backprop", "adjoint", "checkpoint", "torchdiffeq_adjoint")
NAMES = ("z10", "z20", "lam", "theta", "T")
TORCHDIFFEQ_METHODS = {"euler", "midpoint", "rk4", "bosh3", "dopri5"}


class DecayFeed(nn.Module):
    """``f(t, z) = (lam z1, theta z1)`` for ``z`` of shape ``(..., 2)``; ``lam``, ``theta`` are parameters.

    With ``angle != 0`` the field acts on rotated coordinates ``w = Q z`` (``w`` of shape
    ``(..., 2)``): ``f_w(w) = Q f(Q^T w)``; :meth:`to_rotated` and :meth:`from_rotated` map states.
    """

    def __init__(self, lam: float, theta: float = 1.0, dtype=torch.float64, device=None, angle: float = 0.0):
        super().__init__()
        self.lam = nn.Parameter(torch.tensor(float(lam), dtype=dtype, device=device))
        self.theta = nn.Parameter(torch.tensor(float(theta), dtype=dtype, device=device))
        self.angle = float(angle)
        c, s = math.cos(self.angle), math.sin(self.angle)
        self.register_buffer("Q", torch.tensor([[c, -s], [s, c]], dtype=dtype, device=device))

    def to_rotated(self, z):
        """``w = Q z`` for row vectors ``z`` of shape ``(..., 2)`` (identity when ``angle == 0``)."""
        return z if self.angle == 0.0 else z @ self.Q.T

    def from_rotated(self, w):
        """``z = Q^T w`` for row vectors ``w`` of shape ``(..., 2)``."""
        return w if self.angle == 0.0 else w @ self.Q

    def forward(self, t, w):
        z1 = self.from_rotated(w)[..., :1]
        return self.to_rotated(torch.cat([self.lam * z1, self.theta * z1], dim=-1))


def analytic_gradient(lam: float, theta: float, T: float, z10: float = 1.0) -> list[float]:
    """``dL/d(z10, z20, lam, theta, T)`` for ``L = z2(T)`` (float64 arithmetic)."""
    e = math.exp(lam * T)
    s = math.expm1(lam * T) / lam  # (e^{lam T} - 1) / lam without cancellation
    return [theta * s, 1.0, theta * z10 * (T * e / lam - s / lam), z10 * s, theta * z10 * e]


@dataclass
class GradientRow:
    """One route: ``grad`` in the order of :data:`NAMES`; ``rel_error`` = ||g - g_analytic|| / ||g_analytic||."""

    route: str
    grad: list[float]
    rel_error: float
    nfe: int | None = None
    nfe_backward: int | None = None
    status: str = "success"
    note: str = ""


@dataclass
class GradientTable:
    """Every route on one configuration of :class:`DecayFeed`."""

    settings: dict
    rows: list[GradientRow] = field(default_factory=list)

    def row(self, route: str) -> GradientRow:
        return next(r for r in self.rows if r.route == route)

    def records(self) -> list[dict]:
        """Rows as dicts (for display): route, each gradient entry, error, work, status."""
        out = []
        for r in self.rows:
            d = {
                "route": r.route,
                **{f"dL/d{n}": g for n, g in zip(NAMES, r.grad)},
                "rel. error": r.rel_error,
                "NFE fwd": r.nfe,
                "NFE bwd": r.nfe_backward,
                "status": r.status,
            }
            if r.note:
                d["note"] = r.note
            out.append(d)
        return out

    def __str__(self) -> str:
        head = f"{'route':<20}{'rel. error':>12}{'NFE fwd':>9}{'NFE bwd':>9}  status"
        lines = [head] + [
            f"{r.route:<20}{r.rel_error:>12.2e}{_fmt(r.nfe):>9}{_fmt(r.nfe_backward):>9}  "
            f"{r.status}{' (' + r.note + ')' if r.note else ''}"
            for r in self.rows
        ]
        return "\n".join(lines)


def _fmt(v) -> str:
    return "-" if v is None else str(v)


def _rel_error(g, ref) -> float:
    num = math.sqrt(sum((a - b) ** 2 for a, b in zip(g, ref)))
    den = math.sqrt(sum(b * b for b in ref))
    return num / den if math.isfinite(num) else math.inf


def _solve_kwargs(method, rtol, atol, step_size, max_steps):
    kw = dict(method=method, rtol=rtol, atol=atol, max_steps=max_steps)
    if step_size is not None:
        kw["step_size"] = step_size
    return kw


def _loss(lam, theta, T, z10, z20, *, device, dtype, solve_kw, gradient, angle=0.0):
    """One solve (in rotated coordinates when ``angle != 0``); returns (L, leaf tensors, solution)."""
    field_ = DecayFeed(lam, theta, dtype=dtype, device=device, angle=angle)
    z0 = torch.tensor([z10, z20], dtype=dtype, device=device, requires_grad=True)
    t = torch.tensor([0.0, T], dtype=dtype, device=device, requires_grad=True)
    sol = odeint(field_, field_.to_rotated(z0), t, gradient=gradient, **solve_kw)
    return field_.from_rotated(sol.ys[-1])[1], (z0, field_.lam, field_.theta, t), sol


def _grad_from(leaves, L) -> list[float]:
    z0, lam, theta, t = leaves
    gz, gl, gth, gt = torch.autograd.grad(L, [z0, lam, theta, t])
    values = torch.cat([gz, gl.reshape(1), gth.reshape(1), gt[-1:]]).detach().cpu()
    return [float(v) for v in values]


def gradient_table(
    lam: float = -1.0,
    T: float = 1.0,
    *,
    theta: float = 1.0,
    z10: float = 1.0,
    z20: float = 0.0,
    method: str = "dopri5",
    rtol: float = 1e-8,
    atol: float = 1e-8,
    step_size=None,
    max_steps: int = 100_000,
    routes=ROUTES,
    fd_eps: float = 1e-6,
    device="cpu",
    dtype=torch.float64,
    angle: float = 0.0,
) -> GradientTable:
    """Every route's ``dL/d(z10, z20, lam, theta, T)`` on :class:`DecayFeed`, against the analytic one.

    ``angle``: solve the system rotated by this angle (radians); the gradients are the same.

    A route that fails (a solve that does not finish, a method torchdiffeq lacks) keeps its row
    with ``status`` saying why and ``rel_error`` inf, never a silent number.
    """
    unknown = [r for r in routes if r not in ROUTES]
    if unknown:
        raise ValueError(f"routes={unknown} are not known; valid routes: {list(ROUTES)}")
    SOLVERS[method]  # noqa: B018 (raises ValueError listing the valid names)
    device = torch.device(device)
    solve_kw = _solve_kwargs(method, rtol, atol, step_size, max_steps)
    ref = analytic_gradient(lam, theta, T, z10)
    table = GradientTable(
        dict(
            lam=lam,
            T=T,
            theta=theta,
            z10=z10,
            z20=z20,
            method=method,
            rtol=rtol,
            atol=atol,
            step_size=step_size,
            device=str(device),
            dtype=str(dtype),
            angle=angle,
        )
    )
    for route in routes:
        if route == "analytic":
            table.rows.append(GradientRow("analytic", ref, 0.0))
        elif route == "finite_differences":
            table.rows.append(_finite_differences(lam, theta, T, z10, z20, ref, device, dtype, solve_kw, fd_eps, angle))
        elif route == "torchdiffeq_adjoint":
            table.rows.append(
                _torchdiffeq_row(lam, theta, T, z10, z20, ref, device, dtype, method, rtol, atol, step_size, angle)
            )
        else:
            try:
                L, leaves, sol = _loss(
                    lam, theta, T, z10, z20, device=device, dtype=dtype, solve_kw=solve_kw, gradient=route, angle=angle
                )
                g = _grad_from(leaves, L)
                status = sol.stats.get("backward_status")
                table.rows.append(
                    GradientRow(
                        route,
                        g,
                        _rel_error(g, ref),
                        sol.stats.get("nfe"),
                        sol.stats.get("nfe_backward"),
                        status.value if status is not None else "success",
                    )
                )
            except (SolverError, ValueError) as exc:
                table.rows.append(
                    GradientRow(
                        route, [math.nan] * 5, math.inf, status="failed", note=str(exc).split(". What to try")[0][:160]
                    )
                )
    return table


def _finite_differences(lam, theta, T, z10, z20, ref, device, dtype, solve_kw, eps, angle=0.0) -> GradientRow:
    base = [z10, z20, lam, theta, T]
    nfe = 0

    def loss(values):
        nonlocal nfe
        with torch.no_grad():
            L, _, sol = _loss(
                values[2],
                values[3],
                values[4],
                values[0],
                values[1],
                device=device,
                dtype=dtype,
                solve_kw=solve_kw,
                gradient="backprop",
                angle=angle,
            )
        nfe += sol.stats["nfe"]
        return float(L)

    grad = []
    try:
        for i, v in enumerate(base):
            h = eps * max(1.0, abs(v))
            up, down = list(base), list(base)
            up[i], down[i] = v + h, v - h
            grad.append((loss(up) - loss(down)) / (2 * h))
    except SolverError as exc:
        return GradientRow(
            "finite_differences",
            [math.nan] * 5,
            math.inf,
            nfe,
            status="failed",
            note=str(exc).split(". What to try")[0][:160],
        )
    return GradientRow(
        "finite_differences",
        grad,
        _rel_error(grad, ref),
        nfe,
        None,
        "success",
        f"central, step {eps:g} x max(1, |value|)",
    )


def _torchdiffeq_row(
    lam, theta, T, z10, z20, ref, device, dtype, method, rtol, atol, step_size, angle=0.0
) -> GradientRow:
    if method not in TORCHDIFFEQ_METHODS:
        return GradientRow(
            "torchdiffeq_adjoint", [math.nan] * 5, math.inf, status="n/a", note=f"torchdiffeq has no {method!r}"
        )
    from torchdiffeq import odeint_adjoint

    field_ = DecayFeed(lam, theta, dtype=dtype, device=device, angle=angle)
    calls = {"n": 0}

    class Counted(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = field_

        def forward(self, t, z):
            calls["n"] += 1
            return self.inner(t, z)

    counted = Counted()
    z0 = torch.tensor([z10, z20], dtype=dtype, device=device, requires_grad=True)
    t = torch.tensor([0.0, T], dtype=dtype, device=device, requires_grad=True)
    options = {"step_size": step_size} if step_size is not None else None
    try:
        ys = odeint_adjoint(counted, field_.to_rotated(z0), t, rtol=rtol, atol=atol, method=method, options=options)
        nfe = calls["n"]
        g = _grad_from((z0, field_.lam, field_.theta, t), field_.from_rotated(ys[-1])[1])
    except (AssertionError, RuntimeError) as exc:
        return GradientRow("torchdiffeq_adjoint", [math.nan] * 5, math.inf, status="failed", note=str(exc)[:160])
    return GradientRow("torchdiffeq_adjoint", g, _rel_error(g, ref), nfe, calls["n"] - nfe)


def theta_error(grad, ref) -> float:
    """Relative error of the ``dL/dtheta`` entry alone (the one that needs ``z1`` along the whole path)."""
    i = NAMES.index("theta")
    return abs(grad[i] - ref[i]) / abs(ref[i]) if math.isfinite(grad[i]) else math.inf


def gradient_error_sweep(
    *,
    lam: float = -10.0,
    horizons=(0.5, 1.0, 2.0, 3.0),
    tolerances=(1e-4, 1e-6, 1e-8),
    method: str = "dopri5",
    routes=("adjoint", "checkpoint"),
    device="cpu",
    dtype=torch.float64,
    progress: bool = False,
    atol: float | None = None,
    angle: float = 0.0,
) -> list[dict]:
    """Relative gradient error of each route against the analytic gradient, over horizon ``T``
    and tolerance: ``rtol = tol`` and ``atol = tol`` (or the fixed ``atol`` when given), on the
    system rotated by ``angle``. Rows: ``T``, ``tol``, ``atol``, ``angle``, ``route``,
    ``rel_error`` (whole gradient), ``theta_error`` (``dL/dtheta`` alone), ``nfe``,
    ``nfe_backward``, ``status``, ``note`` (why a route failed)."""
    points = [(T, tol) for tol in tolerances for T in horizons]
    if progress:
        from tqdm.auto import tqdm

        points = tqdm(points, desc="gradient error", leave=False)
    out = []
    for T, tol in points:
        a = tol if atol is None else atol
        table = gradient_table(
            lam, T, method=method, rtol=tol, atol=a, routes=routes, device=device, dtype=dtype, angle=angle
        )
        ref = analytic_gradient(lam, 1.0, T)
        for r in table.rows:
            out.append(
                {
                    "T": T,
                    "tol": tol,
                    "atol": a,
                    "angle": angle,
                    "route": r.route,
                    "rel_error": r.rel_error,
                    "theta_error": theta_error(r.grad, ref),
                    "nfe": r.nfe,
                    "nfe_backward": r.nfe_backward,
                    "status": r.status,
                    "note": r.note,
                }
            )
    return out
