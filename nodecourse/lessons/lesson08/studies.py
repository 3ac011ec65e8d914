"""Lesson 8's measurements, each returning a frozen result (cached where it trains or samples at length).

- :func:`linear_flow_check`: on a linear field ``f(z) = A z`` the density is known in closed form;
  the integrated ``-tr`` must match it.
- :func:`trace_vs_logdet`: on a nonlinear field, ``∫ tr(∂f/∂z) dt`` against the discrete change of
  variables ``log |det ∂z(1)/∂z(0)|`` of the solved map.
- :func:`trace_estimator_study`: Hutchinson's estimator at one point: bias and variance against the
  number of probes ``M``, and the variance its formula predicts.
- :func:`trace_cost_study`: seconds per trace, exact (``d`` backward passes) vs one probe.
- :func:`train_flow`: a CNF fitted to two moons by maximum likelihood, its NFE logged.
- :func:`density_grid`: a trained CNF's log-density on a grid.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from nodecourse.lessons.lesson08.config import QUICK_FLOW, QUICK_TRACE, FlowConfig, TraceStudyConfig
from nodecourse.lessons.study import cached_study
from nodecourse.models import (
    CNF,
    AutonomousField,
    MLPField,
    divergence_exact,
    divergence_hutchinson,
    hutchinson_variance,
    sample_probes,
    standard_normal_log_prob,
    two_moons,
)

__all__ = [
    "DensityGrid",
    "FlowRun",
    "LinearFlowCheck",
    "LogdetCheck",
    "ProbeRow",
    "TraceCost",
    "TraceStudy",
    "adjoint_available",
    "density_grid",
    "gaussian_nll",
    "linear_flow_check",
    "resolve_gradient",
    "trace_cost_study",
    "trace_estimator_study",
    "trace_vs_logdet",
    "train_flow",
]


def adjoint_available() -> bool:
    """True when :func:`nodecourse.odeint` accepts ``gradient="adjoint"`` (a tiny solve and backward)."""
    from nodecourse import odeint

    f = torch.nn.Linear(2, 2)
    y0 = torch.ones(1, 2, requires_grad=True)
    try:
        sol = odeint(AutonomousField(f), y0, torch.tensor([0.0, 0.1]), method="rk4", step_size=0.05, gradient="adjoint")
        sol.ys[-1].sum().backward()
    except (ValueError, TypeError, NotImplementedError):
        return False
    return True


def resolve_gradient(requested: str) -> str:
    """``requested``, or ``"backprop"`` when ``"adjoint"`` was asked for and is not available here."""
    if requested == "adjoint" and not adjoint_available():
        return "backprop"
    return requested


# --- the change of variables on fields where the answer is known -------------------------------------


@dataclass(frozen=True)
class LinearFlowCheck:
    """The CNF's log-density on ``f(z) = A z`` against the closed form (largest absolute errors, nats)."""

    max_error: float
    max_error_without_volume_term: float
    trace_A: float
    nfe: int
    rtol: float


@cached_study
def linear_flow_check(seed: int = 0, n: int = 256, rtol: float = 1e-9) -> LinearFlowCheck:
    """``f(z) = A z`` on R^2 (float64): ``log p(x) = log N(e^A x) + tr(A)``; compare the CNF's value on ``n``
    points, and the baseline that ignores the volume change (``log N(e^A x)`` alone)."""
    gen = torch.Generator().manual_seed(seed)
    a = 0.7 * torch.randn(2, 2, generator=gen, dtype=torch.float64)
    lin = torch.nn.Linear(2, 2, bias=False).double()
    with torch.no_grad():
        lin.weight.copy_(a)
    cnf = CNF(2, field=AutonomousField(lin), method="dopri5", rtol=rtol, atol=rtol)
    x = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        logp = cnf.log_prob(x)
        z1 = x @ torch.linalg.matrix_exp(a).T
        exact = standard_normal_log_prob(z1) + torch.trace(a)
        no_volume = standard_normal_log_prob(z1)
    return LinearFlowCheck(
        (logp - exact).abs().max().item(),
        (no_volume - exact).abs().max().item(),
        torch.trace(a).item(),
        int(cnf.last_stats["nfe"]),
        rtol,
    )


@dataclass(frozen=True)
class LogdetCheck:
    """``Δlog p`` of the CNF against ``-log|det J|`` of the solved map: largest difference, typical size."""

    max_diff: float
    mean_abs_logdet: float
    nfe: int
    dim: int


@cached_study
def trace_vs_logdet(seed: int = 0, dim: int = 3, n: int = 8, rtol: float = 1e-9) -> LogdetCheck:
    """On a random tanh MLP field (float64): ``Δlog p`` from the CNF against ``-log|det J|`` of the
    flow map ``x -> z(1)``, its Jacobian ``J`` ``(dim, dim)`` built by autograd, at ``n`` points."""
    from nodecourse import odeint

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        fld = MLPField(dim, (32,), activation="tanh", time_dependent=True).double()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, dim, generator=gen, dtype=torch.float64)
    cnf = CNF(dim, field=fld, rtol=rtol, atol=rtol)
    with torch.no_grad():
        _, delta, _ = cnf._solve(x, 0.0, 1.0)
    t = torch.tensor([0.0, 1.0], dtype=torch.float64)

    def flow_map(x1):
        return odeint(fld, x1.unsqueeze(0), t, rtol=rtol, atol=rtol).ys[-1, 0]

    logdets = torch.stack([torch.linalg.slogdet(torch.autograd.functional.jacobian(flow_map, xi))[1] for xi in x])
    return LogdetCheck(
        (delta + logdets).abs().max().item(), logdets.abs().mean().item(), int(cnf.last_stats["nfe"]), dim
    )


# --- Hutchinson's estimator ----------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeRow:
    """``repeats`` estimates with ``M`` probes each: their mean, variance, standard error of the mean,
    the bias in standard errors, and the variance the formula predicts for M probes."""

    M: int
    mean: float
    variance: float
    se: float
    bias_z: float
    predicted_variance: float


@dataclass(frozen=True)
class TraceStudy:
    """The exact trace, one :class:`ProbeRow` per M, the fitted slope of log variance against log M."""

    config: TraceStudyConfig
    exact: float
    rows: tuple[ProbeRow, ...]
    slope: float
    predicted_single_variance: float


def _random_field(dim: int, hidden: int, seed: int) -> torch.nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MLPField(dim, (hidden,), activation="tanh").double()


def log_log_slope(xs, ys) -> float:
    """Least-squares slope of log ``ys`` against log ``xs``."""
    lx = torch.tensor([math.log(v) for v in xs], dtype=torch.float64)
    ly = torch.tensor([math.log(v) for v in ys], dtype=torch.float64)
    return (((lx - lx.mean()) * (ly - ly.mean())).sum() / ((lx - lx.mean()) ** 2).sum()).item()


@cached_study
def trace_estimator_study(config: TraceStudyConfig = QUICK_TRACE) -> TraceStudy:
    """Hutchinson estimates of ``tr(∂f/∂z)`` at one point ``z`` of a random field, ``repeats`` times per M.

    The point is copied into a batch of ``repeats`` rows (the field does not mix rows), so one call
    of :func:`divergence_hutchinson` gives ``repeats`` independent estimates.
    """
    fld = _random_field(config.dim, config.hidden, config.seed)
    gen = torch.Generator().manual_seed(config.seed)
    z0 = torch.randn(1, config.dim, generator=gen, dtype=torch.float64)
    z = z0.expand(config.repeats, config.dim).clone().requires_grad_(True)
    f_out = fld(None, z)
    exact = divergence_exact(f_out, z)[0].item()
    jac = torch.autograd.functional.jacobian(lambda v: fld(None, v.unsqueeze(0))[0], z0[0])
    predicted_single = hutchinson_variance(jac, config.noise).item()
    rows = []
    for m in config.probes:
        probes = sample_probes((m, config.repeats, config.dim), noise=config.noise, generator=gen, dtype=torch.float64)
        est = divergence_hutchinson(f_out, z, probes).detach()
        mean, var = est.mean().item(), est.var().item()
        se = math.sqrt(var / config.repeats)
        rows.append(ProbeRow(m, mean, var, se, (mean - exact) / se if se > 0 else 0.0, predicted_single / m))
    slope = log_log_slope([r.M for r in rows], [r.variance for r in rows])
    return TraceStudy(config, exact, tuple(rows), slope, predicted_single)


@dataclass(frozen=True)
class TraceCost:
    """Seconds per trace at one dimension (median of repeats), and the backward passes each costs."""

    dim: int
    exact_s: float
    hutchinson_s: float
    backward_passes_exact: int
    backward_passes_hutchinson: int = 1


def trace_cost_study(
    dims=(2, 8, 32, 128), batch: int = 256, hidden: int = 128, repeats: int = 5
) -> tuple[TraceCost, ...]:
    """Seconds per trace of a tanh MLP field's Jacobian on a batch: exact (``d`` backward passes)
    against Hutchinson with one probe (one backward pass), per dimension (median of ``repeats``).
    Not cached: it is a timing, and a second call measures again."""
    out = []
    for d in dims:
        fld = _random_field(d, hidden, 0).float()
        z = torch.randn(batch, d).requires_grad_(True)
        f_out = fld(None, z)
        probes = sample_probes((1, batch, d))
        timings = {}
        # check_batch=False: the study times the trace itself (d vector-Jacobian products), not the
        # one extra product that checks a field for batch mixing (the field here is row-wise).
        for name, fn in (
            ("exact", lambda: divergence_exact(f_out, z, check_batch=False)),
            ("hutchinson", lambda: divergence_hutchinson(f_out, z, probes)),
        ):
            ts = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - start)
            timings[name] = sorted(ts)[len(ts) // 2]
        out.append(TraceCost(d, timings["exact"], timings["hutchinson"], d))
    return tuple(out)


# --- a CNF on two moons -------------------------------------------------------------------------


@dataclass(frozen=True)
class FlowRun:
    """A trained two-moons CNF and its log: per-iteration batch NLL (nats) and NFE, the test NLL (exact
    trace) against the best Gaussian's.

    Frozen, its logs stored as tuples: :func:`train_flow` caches the run and hands every caller the same
    object, so no caller can change what the next one reads. (``model`` is shared too.)"""

    config: FlowConfig
    gradient: str
    model: CNF
    losses: tuple[float, ...] = ()
    nfe_forward: tuple[int, ...] = ()
    nfe_backward: tuple[int, ...] = ()
    seconds: float = 0.0
    test_nll: float = float("nan")
    gaussian_test_nll: float = float("nan")
    test_nfe: int = 0

    def __post_init__(self):
        # lists given by a caller become tuples, so the cached run cannot be appended to
        for name in ("losses", "nfe_forward", "nfe_backward"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


def gaussian_nll(train: torch.Tensor, test: torch.Tensor) -> float:
    """Mean negative log-likelihood (nats) on ``test`` ``(n, d)`` of the Gaussian fitted to ``train`` by maximum
    likelihood: the baseline any flow must beat (an affine flow can represent exactly this)."""
    mean = train.mean(0)
    cov = torch.cov((train - mean).T, correction=0)
    dist = torch.distributions.MultivariateNormal(mean, covariance_matrix=cov)
    return -dist.log_prob(test).mean().item()


@cached_study
def train_flow(config: FlowConfig = QUICK_FLOW, *, progress: bool = False) -> FlowRun:
    """Fit a CNF to two moons by maximum likelihood (Adam); cached per configuration.

    Logs the training NLL, forward NFE and (with the adjoint) backward NFE per iteration; then
    measures the test NLL with the exact trace at the same tolerance, against the best Gaussian's.
    """
    from nodecourse.training import train_epochs

    gradient = resolve_gradient(config.gradient)
    x_train = two_moons(config.n_train, seed=config.seed)
    x_test = two_moons(config.n_test, seed=config.seed + 1000)
    torch.manual_seed(config.seed)
    model = CNF(
        2,
        config.hidden,
        trace=config.trace,
        n_probes=config.n_probes,
        method=config.method,
        rtol=config.tol,
        atol=config.tol,
        gradient=gradient,
    )
    gen = torch.Generator().manual_seed(config.seed)
    losses: list[float] = []
    nfe_forward: list[int] = []
    nfe_backward: list[int] = []

    def fresh_batch():  # each "epoch" of the loop is one step on a freshly drawn batch
        yield torch.randint(0, config.n_train, (config.batch,), generator=gen)

    def loss_on_batch(idx):
        return -model.log_prob(x_train[idx], generator=gen).mean(), {}

    def on_epoch(row, model):
        stats = model.last_stats  # read after backward: the adjoint adds its backward NFE there
        losses.append(row["loss"])
        nfe_forward.append(int(stats["nfe"]))
        nfe_backward.append(int(stats.get("nfe_backward", 0)))

    start = time.perf_counter()
    train_epochs(
        model,
        loss_on_batch,
        fresh_batch,
        epochs=config.iterations,
        optimizer=torch.optim.Adam(model.parameters(), lr=config.lr),
        on_epoch=on_epoch,
        progress=progress,
        desc="CNF on two moons",
    )
    seconds = time.perf_counter() - start
    model.dynamics.trace = "exact"  # evaluation: no estimator noise in the reported likelihood
    with torch.no_grad():
        test_nll = -model.log_prob(x_test).mean().item()
    test_nfe = int(model.last_stats["nfe"])
    model.dynamics.trace = config.trace
    return FlowRun(
        config,
        gradient,
        model,
        losses=tuple(losses),
        nfe_forward=tuple(nfe_forward),
        nfe_backward=tuple(nfe_backward),
        seconds=seconds,
        test_nll=test_nll,
        gaussian_test_nll=gaussian_nll(x_train, x_test),
        test_nfe=test_nfe,
    )


@dataclass(frozen=True)
class DensityGrid:
    """``logp`` ``(n, n)`` on the grid ``x`` ``(n,)`` by ``y`` ``(n,)`` (rows follow ``y``), and the solve's NFE."""

    x: torch.Tensor
    y: torch.Tensor
    logp: torch.Tensor
    nfe: int


@torch.no_grad()
def density_grid(model: CNF, lim: float = 2.5, n: int = 80) -> DensityGrid:
    """``log p`` on an ``n`` x ``n`` grid over ``[-lim, lim]²`` (exact trace)."""
    param = next(model.parameters())
    axis = torch.linspace(-lim, lim, n, dtype=param.dtype, device=param.device)
    gy, gx = torch.meshgrid(axis, axis, indexing="ij")
    pts = torch.stack([gx.reshape(-1), gy.reshape(-1)], dim=1)
    trace = model.dynamics.trace
    model.dynamics.trace = "exact"
    try:
        logp = model.log_prob(pts).reshape(n, n)
    finally:
        model.dynamics.trace = trace
    return DensityGrid(axis.cpu(), axis.cpu(), logp.cpu(), int(model.last_stats["nfe"]))
