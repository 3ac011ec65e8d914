"""Lesson 11's SDE studies: strong orders on geometric Brownian motion, the stochastic adjoint against backprop
on the same Brownian path, and peak memory against the number of steps. Each is cached by
:func:`~nodecourse.lessons.study.cached_study`, so the figures, the findings and the ledger rows read one run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from nodecourse.lessons.lesson11.sde_config import (
    QUICK_ADJOINT,
    QUICK_SDE_MEMORY,
    QUICK_STRONG,
    STEP_FACTOR,
    AdjointConfig,
    SDEMemoryConfig,
    StrongOrderConfig,
)
from nodecourse.lessons.study import cached_study
from nodecourse.measure import measure_peak
from nodecourse.sde import BrownianPath, sdeint

FLOAT_DTYPES = ("float32", "float64")


def _dtype_device(config) -> tuple[torch.dtype, torch.device]:
    """``config.dtype`` (a name in :data:`FLOAT_DTYPES`) and ``config.device`` as torch objects."""
    if config.dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype={config.dtype!r} in {type(config).__name__}: pass one of {FLOAT_DTYPES}")
    return getattr(torch, config.dtype), torch.device(config.device)


# ----------------------------------------------------------------------------------------------
# Slopes and their bootstrap interval


def fit_slope(steps, errors) -> float:
    """Least-squares slope of ``log(errors)`` on ``log(steps)`` (both shape ``(levels,)``): the order."""
    x = torch.as_tensor(steps, dtype=torch.float64).log()
    y = torch.as_tensor(errors, dtype=torch.float64).log()
    if x.shape != y.shape or x.dim() != 1 or x.numel() < 2:
        raise ValueError(
            f"fit_slope needs steps and errors of one shape (levels,) with at least 2 levels; got "
            f"{tuple(x.shape)} and {tuple(y.shape)}"
        )
    x = x - x.mean()
    return float((x * (y - y.mean())).sum() / (x * x).sum())


def bootstrap_slope(
    errors: torch.Tensor, steps, *, resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float, float]:
    """The slope of log mean error on log step, and its percentile bootstrap interval over paths.

    Args:
        errors: per-path errors, shape ``(levels, paths)``; a resample draws ``paths`` columns with replacement
            (each path keeps its errors at every step: the levels share the path's Brownian motion).
        steps: the step sizes, shape ``(levels,)``.
    Returns:
        ``(slope, lo, hi)``: the slope of the mean errors over all paths and the ``confidence`` interval.
    """
    errors = torch.as_tensor(errors, dtype=torch.float64)
    if errors.dim() != 2 or errors.shape[1] < 2:
        raise ValueError(f"errors must have shape (levels, paths) with at least 2 paths; got {tuple(errors.shape)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence={confidence} must lie in (0, 1), e.g. 0.95")
    x = torch.as_tensor(steps, dtype=torch.float64).log()
    x = x - x.mean()
    gen = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, errors.shape[1], (resamples, errors.shape[1]), generator=gen)
    y = errors[:, idx].mean(dim=2).log()  # (levels, resamples): each resample's mean error per level
    slopes = (x[:, None] * (y - y.mean(dim=0))).sum(dim=0) / (x * x).sum()
    tail = (1 - confidence) / 2
    lo, hi = torch.quantile(slopes, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return fit_slope(steps, errors.mean(dim=1)), lo, hi


# ----------------------------------------------------------------------------------------------
# 1 · Strong orders on geometric Brownian motion


class GeometricBrownianMotion:
    """``dX = mu X dt + sigma X dW`` (Ito, diagonal noise); exact solution :meth:`exact`."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, mu: float, sigma: float):
        self.mu, self.sigma = mu, sigma

    def f(self, t, y):
        return self.mu * y

    def g(self, t, y):
        return self.sigma * y

    def exact(self, x0: torch.Tensor, t: float, w_t: torch.Tensor) -> torch.Tensor:
        """``x0 exp((mu - sigma^2 / 2) t + sigma W_t)`` (shape of ``w_t``): the solution on that path."""
        return x0 * torch.exp((self.mu - self.sigma**2 / 2) * t + self.sigma * w_t)


@dataclass(frozen=True)
class StrongOrderRun:
    """One scheme on GBM: the step sizes, the mean absolute error at ``T = 1`` per step, the fitted slope and
    its bootstrap 95 % interval over ``paths`` paths, and the solver steps taken in all."""

    method: str
    dts: tuple[float, ...]
    mean_errors: tuple[float, ...]
    slope: float
    lo: float
    hi: float
    paths: int
    steps: int


def strong_errors(config: StrongOrderConfig, method: str) -> tuple[torch.Tensor, tuple[float, ...], int]:
    """Per-path errors ``|X_T - X_T exact|`` at ``T = 1``, shape ``(levels, paths)``, the step sizes, and the
    solver steps taken; every level solves on the same Brownian path."""
    dtype, device = _dtype_device(config)
    bm = BrownianPath(0.0, 1.0, (config.paths, 1), seed=config.seed, dtype=dtype, device=device)
    gbm = GeometricBrownianMotion(config.mu, config.sigma)
    x0 = torch.full((config.paths, 1), config.x0, dtype=dtype, device=device)
    exact = gbm.exact(x0, 1.0, bm(0.0, 1.0))
    dts = tuple(2.0**-k for k in config.levels)
    errors, steps = [], 0
    with torch.no_grad():  # no parameters: Milstein's dg/dy needs no graph kept
        for dt in dts:
            sol = sdeint(gbm, x0, [0.0, 1.0], method=method, dt=dt, bm=bm)
            errors.append((sol.ys[-1] - exact).abs()[:, 0])
            steps += sol.steps
    return torch.stack(errors).to(torch.float64).cpu(), dts, steps


@cached_study
def strong_order_study(config: StrongOrderConfig = QUICK_STRONG, progress: bool = False) -> tuple[StrongOrderRun, ...]:
    """Each scheme of ``config.methods`` on GBM: errors against the exact solution over the step sizes, and
    the slope of log mean error on log step with its bootstrap interval over paths."""
    from tqdm.auto import tqdm

    runs = []
    for method in tqdm(config.methods, desc="strong order on GBM", disable=not progress, leave=False):
        errors, dts, steps = strong_errors(config, method)
        slope, lo, hi = bootstrap_slope(errors, dts, resamples=config.bootstrap, seed=config.seed)
        runs.append(StrongOrderRun(method, dts, tuple(errors.mean(dim=1).tolist()), slope, lo, hi, config.paths, steps))
    return tuple(runs)


# ----------------------------------------------------------------------------------------------
# 2 · The stochastic adjoint against backprop


class SmallNeuralSDE(nn.Module):
    """A Stratonovich SDE with diagonal noise: drift an MLP ``dim -> hidden -> dim`` (tanh); diffusion
    ``s * tanh(y + b) + s / 10`` per channel (``s``, ``b``: parameters of shape ``(dim,)``), so channel ``i`` of
    ``g`` depends on channel ``i`` of ``y`` only, as diagonal noise requires. States: ``(batch, dim)``."""

    noise_type, sde_type = "diagonal", "stratonovich"

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.drift = nn.Sequential(nn.Linear(dim, hidden), nn.Tanh(), nn.Linear(hidden, dim))
        self.scale = nn.Parameter(torch.full((dim,), 0.5))
        self.shift = nn.Parameter(torch.zeros(dim))

    def f(self, t, y):
        return self.drift(y)

    def g(self, t, y):
        return self.scale * torch.tanh(y + self.shift) + 0.1 * self.scale


#: The output times of the adjoint study: the loss reads the state at T / 2 and T, so dL/dy enters midway.
LOSS_TIMES = (0.0, 0.5, 1.0)


def _loss(ys) -> torch.Tensor:
    """``mean(y(T/2)^2) + mean(y(T)^2)`` from the states at :data:`LOSS_TIMES` (``ys[0]`` is ``y0``)."""
    return ys[1].pow(2).mean() + ys[2].pow(2).mean()


def reversible_gradient(sde: nn.Module, y0: torch.Tensor, bm, dt: float) -> tuple[torch.Tensor, ...]:
    """The gradient of :func:`_loss` w.r.t. ``(y0, *sde.parameters())`` through reversible Heun (Kidger et al.
    2021; diagonal noise) without storing the forward steps.

    A step maps ``(y_n, z_n)`` to ``z_{n+1} = 2 y_n - z_n + f(z_n) dt + g(z_n) dW`` and
    ``y_{n+1} = y_n + (f(z_n) + f(z_{n+1})) dt / 2 + (g(z_n) + g(z_{n+1})) dW / 2``. The backward pass recovers
    each step's input from its output by algebra (their Alg. 2),

        z_n = 2 y_{n+1} - z_{n+1} - f(z_{n+1}) dt - g(z_{n+1}) dW,
        y_n = y_{n+1} - (f(z_n) + f(z_{n+1})) dt / 2 - (g(z_n) + g(z_{n+1})) dW / 2,

    and applies the step's chain rule there: two evaluations of ``f`` and ``g`` and two vector-Jacobian products
    per step. It equals backprop's gradient up to rounding. ``y0``: ``(batch, d)``; ``bm``: the forward solve's
    Brownian path, size ``(batch, d)``; the step grid is ``sdeint``'s.
    """
    from nodecourse.sde import step_times

    params = list(sde.parameters())
    ts = torch.tensor(LOSS_TIMES, dtype=y0.dtype, device=y0.device)
    as_t = lambda v: torch.as_tensor(v, dtype=y0.dtype, device=y0.device)  # noqa: E731
    grid = [[float(ts[0])]] + step_times(ts, dt)  # the step ends of each output interval
    with torch.no_grad():  # forward: the states at the output times and the last (y, z) are all it keeps
        y, z, ys = y0, y0, [y0]
        f, g = sde.f(as_t(grid[0][0]), z), sde.g(as_t(grid[0][0]), z)
        for i in range(1, len(ts)):
            t = grid[i - 1][-1]
            for end in grid[i]:
                t0, t1 = as_t(t), as_t(end)
                dw, h = bm(t0, t1), t1 - t0
                z = 2 * y - z + f * h + g * dw
                f1, g1 = sde.f(t1, z), sde.g(t1, z)
                y = y + (f + f1) * (0.5 * h) + (g + g1) * (0.5 * dw)
                f, g, t = f1, g1, end
            ys.append(y)
    with torch.enable_grad():
        outs = [v.detach().requires_grad_(True) for v in ys]
        grads_out = torch.autograd.grad(_loss(outs), outs, allow_unused=True)
    grads_out = [torch.zeros_like(v) if d is None else d for d, v in zip(grads_out, ys)]
    a_y, a_z = grads_out[-1].clone(), torch.zeros_like(y0)
    a_params = [torch.zeros_like(p) for p in params]

    def vjp(t, at, scale_dt, dw, cotangent):
        """``(f(t, at) dt + g(t, at) dW)`` evaluated at ``at`` and its vector-Jacobian product with ``cotangent``:
        ``(f, g, d/dat, d/dparams)``."""
        with torch.enable_grad():
            leaf = at.detach().requires_grad_(True)
            fv, gv = sde.f(t, leaf), sde.g(t, leaf)
            out = torch.autograd.grad(fv * scale_dt + gv * dw, [leaf, *params], cotangent, allow_unused=True)
        return fv.detach(), gv.detach(), out[0], out[1:]

    def accumulate(a_params, extra):
        return [a if d is None else a + d for a, d in zip(a_params, extra)]

    for i in range(len(ts) - 1, 0, -1):
        times = [grid[i - 1][-1]] + grid[i]
        for k in range(len(times) - 1, 0, -1):
            t0, t1 = as_t(times[k - 1]), as_t(times[k])
            dw, h = bm(t0, t1), t1 - t0
            # z_{n+1} also enters y_{n+1} through f and g: its whole adjoint
            f1, g1, d_z1, d_p = vjp(t1, z, 0.5 * h, 0.5 * dw, a_y)
            a_z1 = a_z + d_z1
            a_params = accumulate(a_params, d_p)
            with torch.no_grad():
                z = 2 * y - z - f1 * h - g1 * dw  # the algebraic inverse: z_n, then y_n
            # z_n enters z_{n+1} (f dt + g dW) and y_{n+1} (half of it)
            f0, g0, d_z0, d_p = vjp(t0, z, h, dw, a_z1 + 0.5 * a_y)
            a_params = accumulate(a_params, d_p)
            with torch.no_grad():
                y = y - (f0 + f1) * (0.5 * h) - (g0 + g1) * (0.5 * dw)
            a_y, a_z = a_y + 2 * a_z1, d_z0 - a_z1
        a_y = a_y + grads_out[i - 1]
    return (a_y + a_z, *a_params)  # z_0 = y_0: both adjoints flow into y0


def _gradient(sde: nn.Module, y0: torch.Tensor, bm, dt: float, route: str) -> torch.Tensor:
    """The flat gradient of :func:`_loss` w.r.t. ``(y0, parameters)``, by ``route``: ``"backprop"`` or
    ``"adjoint"`` (``sdeint``'s gradients, through reversible Heun) or ``"reversible"``
    (:func:`reversible_gradient`), on the same path ``bm``."""
    if route == "reversible":
        grads = reversible_gradient(sde, y0, bm, dt)
    else:
        ts = torch.tensor(LOSS_TIMES, dtype=y0.dtype, device=y0.device)
        y = y0.clone().requires_grad_(True)
        ys = sdeint(sde, y, ts, method="reversible_heun", dt=dt, bm=bm, gradient=route).ys
        grads = torch.autograd.grad(_loss(ys), [y, *sde.parameters()])
    return torch.cat([g.reshape(-1) for g in grads])


@dataclass(frozen=True)
class AdjointRun:
    """One seed: relative gradient error against backprop per step size, for the stochastic adjoint and for
    reversible Heun's algebraic reverse (:func:`reversible_gradient`); the adjoint's fitted slope (log error on
    log step)."""

    seed: int
    dts: tuple[float, ...]
    adjoint_errors: tuple[float, ...]
    reversible_errors: tuple[float, ...]
    slope: float

    @property
    def finest_error(self) -> float:
        """The adjoint's relative error at the smallest step."""
        return self.adjoint_errors[self.dts.index(min(self.dts))]


def _relative(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a - ref).norm() / ref.norm())


@cached_study
def adjoint_run(config: AdjointConfig, seed: int) -> AdjointRun:
    """One seed of :func:`adjoint_study`: a random :class:`SmallNeuralSDE`, starts and Brownian path."""
    dtype, device = _dtype_device(config)
    torch.manual_seed(seed)
    sde = SmallNeuralSDE(config.dim, config.hidden).to(dtype=dtype, device=device)
    y0 = torch.randn(config.batch, config.dim, dtype=dtype, device=device)
    bm = BrownianPath(0.0, 1.0, (config.batch, config.dim), seed=seed, dtype=dtype, device=device)
    dts = tuple(2.0**-k for k in config.levels)
    adjoint, reversible = [], []
    for dt in dts:
        ref = _gradient(sde, y0, bm, dt, "backprop")
        adjoint.append(_relative(_gradient(sde, y0, bm, dt, "adjoint"), ref))
        reversible.append(_relative(_gradient(sde, y0, bm, dt, "reversible"), ref))
    return AdjointRun(seed, dts, tuple(adjoint), tuple(reversible), fit_slope(dts, adjoint))


def adjoint_study(config: AdjointConfig = QUICK_ADJOINT, progress: bool = False) -> tuple[AdjointRun, ...]:
    """Every seed of ``config`` (each a cached :func:`adjoint_run`)."""
    from tqdm.auto import tqdm

    return tuple(
        adjoint_run(config, seed)
        for seed in tqdm(config.seeds, desc="adjoint vs backprop", disable=not progress, leave=False)
    )


# ----------------------------------------------------------------------------------------------
# 3 · Peak memory against the number of steps


#: The routes of the memory study: backprop and the adjoint with the configured path cache (the two judged),
#: then (``extra_readings``) the adjoint with no path cache and with the path's default cache (8192 values).
MEMORY_ROUTES = ("backprop", "adjoint", "adjoint, no path cache", "adjoint, default path cache")
_CACHE = {"adjoint, no path cache": {"cache_size": 0}, "adjoint, default path cache": {}}


@dataclass(frozen=True)
class SDEMemoryResult:
    """Peak bytes of one forward + backward pass per route (keys of :data:`MEMORY_ROUTES`) at each step count."""

    config: SDEMemoryConfig
    steps: tuple[int, ...]  # (N, 8N)
    peaks: tuple[tuple[str, tuple[int, ...]], ...]  # route -> peak bytes per step count

    def peak(self, route: str) -> tuple[int, ...]:
        """Peak bytes of ``route`` at each step count."""
        return dict(self.peaks)[route]

    def growth(self, route: str) -> float:
        """Peak at the most steps over peak at the fewest."""
        p = self.peak(route)
        return p[-1] / max(p[0], 1)

    @property
    def routes(self) -> tuple[str, ...]:
        return tuple(r for r, _ in self.peaks)


def _memory_pass(config: SDEMemoryConfig, sde: nn.Module, y0: torch.Tensor, n_steps: int, route: str) -> None:
    """One forward + backward pass; the Brownian path is made here, so its cache is counted."""
    cache = _CACHE.get(route, {"cache_size": config.cache_size})
    bm = BrownianPath(0.0, 1.0, tuple(y0.shape), seed=config.seed, dtype=y0.dtype, device=y0.device, **cache)
    gradient = "backprop" if route == "backprop" else "adjoint"
    ys = sdeint(sde, y0, [0.0, 1.0], method="reversible_heun", dt=1.0 / n_steps, bm=bm, gradient=gradient).ys
    ys[-1].pow(2).mean().backward()


@cached_study
def sde_memory_study(config: SDEMemoryConfig = QUICK_SDE_MEMORY, progress: bool = False) -> SDEMemoryResult:
    """Peak memory (:func:`~nodecourse.measure.measure_peak`: on the CPU torch's profiler, or the resident
    set with ``cpu_method="rss"``; the CUDA peak on a GPU) of forward + backward at ``N`` and ``8N`` reversible
    Heun steps, per route."""
    from tqdm.auto import tqdm

    dtype, device = _dtype_device(config)
    torch.manual_seed(config.seed)
    sde = SmallNeuralSDE(config.dim, config.hidden).to(dtype=dtype, device=device)
    y0 = torch.randn(config.batch, config.dim, dtype=dtype, device=device, requires_grad=True)
    routes = MEMORY_ROUTES if config.extra_readings else MEMORY_ROUTES[:2]
    steps = (config.steps, STEP_FACTOR * config.steps)
    for route in routes:  # warm-up: lazy initialisation must not count as the first point's memory
        _memory_pass(config, sde, y0, 2, route)
    peaks = {}
    for route, n in tqdm(
        [(r, n) for r in routes for n in steps], desc="peak memory", disable=not progress, leave=False
    ):
        once = lambda n=n, route=route: _memory_pass(config, sde, y0, n, route)  # noqa: E731
        peaks.setdefault(route, []).append(measure_peak(once, device, config.cpu_method))
        sde.zero_grad(set_to_none=True)
        y0.grad = None
    return SDEMemoryResult(config, steps, tuple((r, tuple(p)) for r, p in peaks.items()))


def bytes_per_step(result: SDEMemoryResult, route: str) -> float:
    """What each extra step adds to ``route``'s peak, in bytes (the slope between the two step counts)."""
    (n0, n1), (p0, p1) = result.steps, result.peak(route)
    return (p1 - p0) / (n1 - n0) if n1 != n0 else math.nan
