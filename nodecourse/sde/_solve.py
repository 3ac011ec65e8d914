"""Fixed-step SDE solves: :func:`sdeint`, its result :class:`SDESolution` and :class:`SDEArgumentError`.

The SDE is an object with ``f(t, y)`` (drift), ``g(t, y)`` (diffusion) and the attributes ``noise_type`` and
``sde_type``, as torchsde's SDE modules have, so those modules work unchanged. Shapes (``y`` of shape
``(..., d)``, usually ``(batch, d)``):

- ``noise_type="diagonal"``: ``g(t, y)`` has the shape of ``y``; the noise ``dW`` too; the noise term is
  ``g * dW``. Entry ``i`` of ``g`` must depend on entry ``i`` of ``y`` only (what "diagonal" means).
- ``noise_type="general"`` (also ``"additive"`` and ``"scalar"``, which are special cases of it):
  ``g(t, y)`` has shape ``(..., d, m)``; ``dW`` has shape ``(..., m)``; the noise term is ``g @ dW``.

Steps are ``dt`` long from ``ts[0]``; the last step before each output time is shortened to land on it
(one within ``1e-6 * dt`` of it is stretched instead, so that no step is vanishingly short). With output
times on the ``dt`` grid this is torchsde's grid, and the two libraries agree to rounding on the same
Brownian path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from nodecourse.solvers import Status

from ._adjoint import adjoint_solve, sde_parameters
from ._brownian import BrownianPath

__all__ = ["METHODS", "SDEArgumentError", "SDESolution", "sdeint", "step_times"]

# method -> (the SDE type it solves, the noise types it accepts, strong order for diagonal/general noise)
METHODS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "euler": ("ito", ("diagonal", "general", "additive", "scalar"), "0.5 (1.0 for additive noise)"),
    "milstein": ("ito", ("diagonal",), "1.0"),
    "reversible_heun": ("stratonovich", ("diagonal", "general", "additive", "scalar"), "0.5 (1.0 additive)"),
}
GRADIENTS = ("backprop", "adjoint")
_STRETCH = 1e-6  # a step that would end within _STRETCH * dt of an output time ends on it instead


class SDEArgumentError(ValueError):
    """An argument of :func:`sdeint` (or of the SDE object given to it) is not usable; the message names
    the argument and what to pass instead."""


@dataclass
class SDESolution:
    """The result of :func:`sdeint`.

    Attributes:
        ys: states at the output times, shape ``(len(ts), *y0.shape)``; rows after a non-finite state are NaN.
        ts: the output times, shape ``(len(ts),)``.
        nfe_drift: evaluations of ``sde.f`` (forward solve).
        nfe_diffusion: evaluations of ``sde.g`` (forward solve; with ``"milstein"`` each one also carries a
            vector-Jacobian product through ``g``; a ``"general"`` noise solve without ``bm`` adds one to
            learn the noise size).
        steps: solver steps taken.
        status: :class:`~nodecourse.solvers.Status`: ``SUCCESS``, or ``NON_FINITE`` when the state stopped
            being finite (``message`` names the time).
        method, dt, gradient: the settings used.
        seed: the seed of the Brownian path made by :func:`sdeint` (None when ``bm`` was given).
        bm: the Brownian path used (pass it to another solve to reuse the same noise).
        message: a sentence describing a failure (empty on success).
        stats: backward-pass work (``gradient="adjoint"``): ``nfe_backward`` (drift plus diffusion
            evaluations) and ``steps_backward``, filled in as the backward pass runs.
    """

    ys: torch.Tensor
    ts: torch.Tensor
    nfe_drift: int
    nfe_diffusion: int
    steps: int
    status: Status
    method: str
    dt: float
    gradient: str = "backprop"
    seed: Optional[int] = None
    bm: Any = None
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def nfe(self) -> int:
        """Drift plus diffusion evaluations."""
        return self.nfe_drift + self.nfe_diffusion

    @property
    def success(self) -> bool:
        return self.status is Status.SUCCESS

    def __repr__(self) -> str:
        return (
            f"SDESolution(method={self.method!r}, status={self.status.name}, ys.shape={tuple(self.ys.shape)}, "
            f"steps={self.steps}, nfe_drift={self.nfe_drift}, nfe_diffusion={self.nfe_diffusion})"
        )


class _Counted:
    """The SDE with its evaluations counted, its noise product, and a one-time check of the noise shape."""

    def __init__(self, sde, noise_type: str):
        self.sde = sde
        self.diagonal = noise_type == "diagonal"
        self.nfe_drift = 0
        self.nfe_diffusion = 0
        self._checked = False

    def f(self, t, y):
        self.nfe_drift += 1
        return self.sde.f(t, y)

    def g(self, t, y):
        self.nfe_diffusion += 1
        return self.sde.g(t, y)

    def prod(self, g: torch.Tensor, dw: torch.Tensor) -> torch.Tensor:
        if not self._checked:
            self._check(g, dw)
        if self.diagonal:
            return g * dw
        return (g @ dw.unsqueeze(-1)).squeeze(-1)

    def _check(self, g: torch.Tensor, dw: torch.Tensor) -> None:
        self._checked = True
        if self.diagonal:
            if g.shape != dw.shape:
                raise SDEArgumentError(
                    f"with noise_type='diagonal', sde.g(t, y) and the Brownian increments must both have y's "
                    f"shape; got g {tuple(g.shape)}, bm increments {tuple(dw.shape)}: make bm with size=y0.shape"
                )
        elif g.dim() < 2 or g.shape[:-2] + g.shape[-1:] != dw.shape:
            raise SDEArgumentError(
                f"with noise_type='general', sde.g(t, y) must have shape (..., d, m) and the Brownian increments "
                f"(..., m); got g {tuple(g.shape)}, bm increments {tuple(dw.shape)}: make bm with "
                f"size=(*y0.shape[:-1], m)"
            )


# One step of each method: (sde, t0, t1, y0, extra, dW) -> (y1, extra). t0, t1 are 0-dim tensors.


def _euler_step(sde: _Counted, t0, t1, y0, extra, dw):
    dt = t1 - t0
    f, g = sde.f(t0, y0), sde.g(t0, y0)
    return y0 + f * dt + sde.prod(g, dw), extra


def _milstein_step(sde: _Counted, t0, t1, y0, extra, dw):
    """Ito Milstein, diagonal noise: ``y + f dt + g dW + 1/2 g g' (dW^2 - dt)``, with ``g g'`` from autograd
    (a vector-Jacobian product of ``g`` with ``g * (dW^2 - dt) / 2``; exact for diagonal noise, where
    ``dg_i/dy_j = 0`` for ``i != j``)."""
    dt = t1 - t0
    f = sde.f(t0, y0)
    requires_grad = torch.is_grad_enabled()
    with torch.enable_grad():
        y = y0 if y0.requires_grad else y0.detach().requires_grad_(True)
        g = sde.g(t0, y)
        half_v = 0.5 * (dw**2 - dt)
        if g.requires_grad:
            (gdg,) = torch.autograd.grad(g, y, grad_outputs=g * half_v, create_graph=requires_grad, allow_unused=True)
        else:
            gdg = None
    if gdg is None:  # g does not depend on y: additive noise, no correction
        gdg = torch.zeros_like(y0)
    return y0 + f * dt + sde.prod(g, dw) + gdg, extra


def _reversible_heun_init(sde: _Counted, t0, y0):
    return (sde.f(t0, y0), sde.g(t0, y0), y0)


def _reversible_heun_step(sde: _Counted, t0, t1, y0, extra, dw):
    """Reversible Heun (Kidger et al. 2021), Stratonovich: one drift and one diffusion evaluation per step."""
    f0, g0, z0 = extra
    dt = t1 - t0
    z1 = 2 * y0 - z0 + f0 * dt + sde.prod(g0, dw)
    f1, g1 = sde.f(t1, z1), sde.g(t1, z1)
    y1 = y0 + (f0 + f1) * (0.5 * dt) + sde.prod(g0 + g1, 0.5 * dw)
    return y1, (f1, g1, z1)


_STEPS: dict[str, tuple[Optional[Callable], Callable]] = {
    "euler": (None, _euler_step),
    "milstein": (None, _milstein_step),
    "reversible_heun": (_reversible_heun_init, _reversible_heun_step),
}


def sdeint(
    sde,
    y0: torch.Tensor,
    ts,
    *,
    method: str,
    dt: float,
    bm=None,
    seed: Optional[int] = None,
    gradient: str = "backprop",
) -> SDESolution:
    """Solve an SDE with fixed steps of size ``dt`` and return the states at ``ts``.

    Args:
        sde: an object with ``f(t, y)``, ``g(t, y)``, ``noise_type`` and ``sde_type`` (torchsde's interface;
            ``t`` arrives as a 0-dim tensor of ``y0``'s dtype and device).
        y0: initial state, shape ``(..., d)`` (torchsde's modules expect ``(batch, d)``).
        ts: increasing output times, shape ``(T,)``; ``ts[0]`` is the time of ``y0``.
        method: ``"euler"`` (Euler-Maruyama, Ito), ``"milstein"`` (Ito, diagonal noise, using autograd for
            ``dg/dy``) or ``"reversible_heun"`` (Stratonovich).
        dt: the step size, > 0.
        bm: the Brownian motion: any object called as ``bm(s, t)`` that returns the increment ``W(t) - W(s)``
            (a :class:`BrownianPath`, or torchsde's ``BrownianInterval``); its shape is ``y0.shape`` for
            diagonal noise, ``(*y0.shape[:-1], m)`` for general noise. Default: a :class:`BrownianPath` on
            ``[ts[0], ts[-1]]`` made from ``seed``.
        seed: seed of that default path (default: drawn from torch's global generator, so
            ``torch.manual_seed`` makes the solve reproducible). Give ``bm`` or ``seed``, not both.
        gradient: ``"backprop"`` (differentiate the solver's operations) or ``"adjoint"`` (the stochastic
            adjoint of Li et al. 2020: a backward solve on the same Brownian path, for Stratonovich SDEs;
            see :mod:`nodecourse.sde._adjoint`).

    Returns:
        :class:`SDESolution` with ``ys`` of shape ``(T, *y0.shape)`` and the solver's work.
    """
    noise_type, sde_type = _check_sde(sde, method)
    y0 = _check_y0(y0)
    ts = _check_ts(ts, y0)
    dt = _check_dt(dt)
    if gradient not in GRADIENTS:
        raise SDEArgumentError(f"gradient={gradient!r} is not one of {GRADIENTS}: pass gradient='backprop'")
    if bm is not None and seed is not None:
        raise SDEArgumentError("give bm or seed, not both: the seed only makes the default Brownian path")
    if bm is not None and not callable(bm):
        raise SDEArgumentError(f"bm must be callable as bm(s, t) (got {type(bm).__name__}): pass a BrownianPath")
    counted = _Counted(sde, noise_type)
    if bm is None:
        if seed is None:
            seed = int(torch.randint(0, 2**62, (), dtype=torch.int64).item())
        bm = BrownianPath(
            float(ts[0]), float(ts[-1]), _noise_size(counted, noise_type, ts, y0), seed=seed, dtype=y0.dtype,
            device=y0.device,
        )  # fmt: skip
    stats: dict[str, Any] = {}
    if gradient == "adjoint":
        if sde_type != "stratonovich":
            raise SDEArgumentError(
                "gradient='adjoint' needs a Stratonovich SDE (sde.sde_type='stratonovich', "
                "method='reversible_heun'), whose adjoint obeys the ordinary chain rule: convert the Ito drift "
                "(f - g dg/dy / 2 for diagonal noise) or use gradient='backprop'"
            )
        params = sde_parameters(sde, SDEArgumentError)
        ys, steps, status, message, stats = adjoint_solve(
            counted, y0, ts, params, method=method, dt=dt, bm=bm, integrate=integrate, step_times=step_times
        )
    else:
        ys, steps, status, message = integrate(counted, y0, ts, method, dt, bm)
    return SDESolution(
        ys=ys, ts=ts, nfe_drift=counted.nfe_drift, nfe_diffusion=counted.nfe_diffusion, steps=steps, status=status,
        method=method, dt=dt, gradient=gradient, seed=seed, bm=bm, message=message, stats=stats,
    )  # fmt: skip


def step_times(ts: torch.Tensor, dt: float) -> list[list[float]]:
    """The step end times of each output interval ``(ts[i-1], ts[i]]``, as floats (the grid of the module
    docstring)."""
    grid, t = [], float(ts[0])
    for out in ts[1:].tolist():
        ends = []
        while t < out:
            nxt = t + dt
            if nxt >= out - _STRETCH * dt:
                nxt = out
            ends.append(nxt)
            t = nxt
        grid.append(ends)
    return grid


def integrate(sde: _Counted, y0, ts, method: str, dt: float, bm, extra=None):
    """The forward loop: returns ``(ys, steps, status, message)``; ``extra`` is the method's state."""
    init, step = _STEPS[method]
    as_t = lambda v: torch.as_tensor(v, dtype=y0.dtype, device=y0.device)  # noqa: E731
    t = as_t(float(ts[0]))
    if init is not None:
        extra = init(sde, t, y0)
    y, ys, steps = y0, [y0], 0
    for i, ends in enumerate(step_times(ts, dt), start=1):
        for end in ends:
            t1 = as_t(end)
            y, extra = step(sde, t, t1, y, extra, bm(t, t1))
            t, steps = t1, steps + 1
        ys.append(y)
        if not torch.isfinite(y).all():
            message = f"the state is not finite at t={float(ts[i]):g} (output {i}); later rows are NaN"
            ys.extend(torch.full_like(y0, math.nan) for _ in range(len(ts) - 1 - i))
            return torch.stack(ys), steps, Status.NON_FINITE, message
    return torch.stack(ys), steps, Status.SUCCESS, ""


def _check_sde(sde, method) -> tuple[str, str]:
    if not isinstance(method, str) or method not in METHODS:
        raise SDEArgumentError(f"method={method!r} is unknown: pass one of {sorted(METHODS)}")
    for name in ("f", "g"):
        if not callable(getattr(sde, name, None)):
            raise SDEArgumentError(
                f"sde has no callable {name}(t, y): give the SDE object drift f(t, y) and diffusion g(t, y)"
            )
    noise_type, sde_type = getattr(sde, "noise_type", None), getattr(sde, "sde_type", None)
    wanted_type, noises, _ = METHODS[method]
    all_noises = METHODS["euler"][1]
    if noise_type not in all_noises:
        raise SDEArgumentError(
            f"sde.noise_type={noise_type!r} is not one of {all_noises}: set the attribute noise_type on the SDE"
        )
    if noise_type not in noises:
        raise SDEArgumentError(
            f"method={method!r} needs sde.noise_type in {noises}, got {noise_type!r}: use method='euler' "
            "(Ito) or 'reversible_heun' (Stratonovich) for this noise"
        )
    if sde_type not in ("ito", "stratonovich"):
        raise SDEArgumentError(f"sde.sde_type={sde_type!r} must be 'ito' or 'stratonovich': set the attribute")
    if sde_type != wanted_type:
        fits = sorted(m for m, (kind, _, _) in METHODS.items() if kind == sde_type)
        raise SDEArgumentError(
            f"method={method!r} solves {wanted_type} SDEs but sde.sde_type={sde_type!r}: use method in {fits}"
        )
    return noise_type, sde_type


def _check_y0(y0) -> torch.Tensor:
    if not isinstance(y0, torch.Tensor) or not y0.is_floating_point():
        raise SDEArgumentError(f"y0 must be a floating-point tensor of shape (..., d); got {type(y0).__name__}")
    if y0.dim() == 0:
        raise SDEArgumentError("y0 must have at least one dimension (..., d): pass y0.reshape(1)")
    return y0


def _check_ts(ts, y0) -> torch.Tensor:
    ts = torch.as_tensor(ts, dtype=y0.dtype, device=y0.device)
    if ts.dim() != 1 or ts.numel() < 2:
        raise SDEArgumentError(f"ts must be 1-D with at least 2 times; got shape {tuple(ts.shape)}")
    if not torch.isfinite(ts).all():
        raise SDEArgumentError("ts must be finite")
    if not (ts[1:] > ts[:-1]).all():
        raise SDEArgumentError(f"ts must be strictly increasing; got {ts.tolist()[:8]}: sort ts and drop repeats")
    return ts


def _check_dt(dt) -> float:
    if isinstance(dt, torch.Tensor) and dt.numel() == 1:
        dt = dt.item()
    if isinstance(dt, bool) or not isinstance(dt, (int, float)):
        raise SDEArgumentError(f"dt must be a positive float; got {type(dt).__name__}")
    if not (math.isfinite(dt) and dt > 0):
        raise SDEArgumentError(f"dt={dt} must be a finite float > 0: pass e.g. dt=1e-2")
    return float(dt)


def _noise_size(counted: _Counted, noise_type: str, ts, y0) -> tuple[int, ...]:
    if noise_type == "diagonal":
        return tuple(y0.shape)
    with torch.no_grad():  # general noise: one diffusion evaluation tells the number of channels m
        g = counted.g(ts[0], y0)
    if g.dim() < 2:
        raise SDEArgumentError(
            f"with noise_type={noise_type!r}, sde.g(t, y) must have shape (..., d, m); got {tuple(g.shape)}"
        )
    return tuple(y0.shape[:-1]) + (g.shape[-1],)
