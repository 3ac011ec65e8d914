"""Lesson 8 (continuous normalising flows): the studies the notebook draws, and its ledger row.

- :func:`linear_flow_check`: on a linear field ``f(z) = A z`` the density is known in
  closed form; the integrated ``-tr`` must match it.
- :func:`trace_vs_logdet`: on a nonlinear field, ``∫ tr(∂f/∂z) dt`` against the discrete
  change of variables ``log |det ∂z(1)/∂z(0)|`` of the solved map (the baseline a discrete
  flow has to pay for).
- :func:`trace_estimator_study`: Hutchinson's estimator at one point: bias, variance
  against the number of probes ``M``, and the variance its formula predicts.
- :func:`trace_cost_study`: seconds per trace, exact (``d`` backward passes) vs one probe.
- :func:`train_flow`: a CNF fitted to two moons by maximum likelihood, its NFE logged
  (cached per configuration, so the ledger and the notebook share one run).

Ledger row ``cnf-hutchinson-variance``.
"""
from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass, field

import torch

from nodecourse.claims import ClaimVerdict, Measurement, Threshold, claim
from nodecourse.models import MLPField
from nodecourse.models.flows import (
    CNF,
    divergence_exact,
    divergence_hutchinson,
    hutchinson_variance,
    sample_probes,
    standard_normal_log_prob,
    two_moons,
)


def adjoint_available() -> bool:
    """True when :func:`nodecourse.odeint` accepts ``gradient="adjoint"`` (a tiny solve and backward)."""
    from nodecourse import odeint

    f = torch.nn.Linear(2, 2)
    y0 = torch.ones(1, 2, requires_grad=True)
    try:
        sol = odeint(lambda t, y: f(y), y0, torch.tensor([0.0, 0.1]), method="rk4", step_size=0.05,
                     gradient="adjoint")
        sol.ys[-1].sum().backward()
    except (ValueError, TypeError, NotImplementedError):
        try:  # the adjoint may ask for func to be an nn.Module
            field_ = _LinearField(f)
            sol = odeint(field_, y0, torch.tensor([0.0, 0.1]), method="rk4", step_size=0.05, gradient="adjoint")
            sol.ys[-1].sum().backward()
        except (ValueError, TypeError, NotImplementedError):
            return False
    return True


class _LinearField(torch.nn.Module):
    def __init__(self, lin: torch.nn.Module):
        super().__init__()
        self.lin = lin

    def forward(self, t, y):
        return self.lin(y)


def resolve_gradient(requested: str) -> str:
    """``requested``, or ``"backprop"`` when ``"adjoint"`` was asked for and is not available here."""
    if requested == "adjoint" and not adjoint_available():
        return "backprop"
    return requested


# --- the change of variables on fields where the answer is known -------------------------------------

def linear_flow_check(seed: int = 0, n: int = 256, rtol: float = 1e-9) -> dict:
    """``f(z) = A z`` on R^2 (float64): ``log p(x) = log N(e^A x) + tr(A)``; compare the CNF's value.

    Returns the largest absolute error of the CNF's log-density, the same for the
    baseline that ignores the volume change (``log N(e^A x)`` alone), and the NFE.
    """
    gen = torch.Generator().manual_seed(seed)
    a = 0.7 * torch.randn(2, 2, generator=gen, dtype=torch.float64)
    lin = torch.nn.Linear(2, 2, bias=False).double()
    with torch.no_grad():
        lin.weight.copy_(a)
    cnf = CNF(2, field=_LinearField(lin), method="dopri5", rtol=rtol, atol=rtol)
    x = torch.randn(n, 2, generator=gen, dtype=torch.float64)
    with torch.no_grad():
        logp = cnf.log_prob(x)
        z1 = x @ torch.linalg.matrix_exp(a).T
        exact = standard_normal_log_prob(z1) + torch.trace(a)
        no_volume = standard_normal_log_prob(z1)
    return {"max_error": (logp - exact).abs().max().item(),
            "max_error_without_volume_term": (no_volume - exact).abs().max().item(),
            "trace_A": torch.trace(a).item(), "nfe": int(cnf.last_stats["nfe"]), "rtol": rtol}


def trace_vs_logdet(seed: int = 0, dim: int = 3, n: int = 8, rtol: float = 1e-9) -> dict:
    """On a random tanh MLP field (float64): ``Δlog p`` from the CNF against ``-log|det J|`` of the
    flow map ``x -> z(1)``, its Jacobian ``J`` ``(d, d)`` built by autograd, per point.

    Returns the largest difference, the typical size of ``log|det J|`` (so the
    difference has a scale), and the solver's NFE.
    """
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
    return {"max_diff": (delta + logdets).abs().max().item(), "mean_abs_logdet": logdets.abs().mean().item(),
            "nfe": int(cnf.last_stats["nfe"]), "dim": dim}


# --- Hutchinson's estimator ----------------------------------------------------------------------

@dataclass(frozen=True)
class TraceStudyConfig:
    dim: int = 16
    hidden: int = 64
    repeats: int = 4000
    probes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    noise: str = "rademacher"
    seed: int = 0


QUICK_TRACE = TraceStudyConfig(repeats=2000)
FULL_TRACE = TraceStudyConfig(repeats=20_000)


def _random_field(dim: int, hidden: int, seed: int) -> torch.nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MLPField(dim, (hidden,), activation="tanh").double()


@functools.lru_cache(maxsize=8)
def trace_estimator_study(config: TraceStudyConfig = QUICK_TRACE) -> dict:
    """Hutchinson estimates of ``tr(∂f/∂z)`` at one point ``z`` of a random field, ``repeats`` times per M.

    The point is copied into a batch of ``repeats`` rows (the field does not mix rows), so
    one call of :func:`divergence_hutchinson` gives ``repeats`` independent estimates.
    Returns per M: mean, variance, standard error of the mean, z-score of the bias,
    the variance the formula predicts (:func:`hutchinson_variance` / M); plus the exact
    trace and the fitted slope of log variance against log M.
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
        probes = sample_probes((m, config.repeats, config.dim), noise=config.noise, generator=gen,
                               dtype=torch.float64)
        est = divergence_hutchinson(f_out, z, probes).detach()
        mean, var = est.mean().item(), est.var().item()
        se = math.sqrt(var / config.repeats)
        rows.append({"M": m, "mean": mean, "variance": var, "se": se,
                     "bias_z": (mean - exact) / se if se > 0 else 0.0, "predicted_variance": predicted_single / m})
    logm = torch.tensor([math.log(r["M"]) for r in rows], dtype=torch.float64)
    logv = torch.tensor([math.log(r["variance"]) for r in rows], dtype=torch.float64)
    slope = (((logm - logm.mean()) * (logv - logv.mean())).sum() / ((logm - logm.mean()) ** 2).sum()).item()
    return {"exact": exact, "rows": rows, "slope": slope, "predicted_single_variance": predicted_single,
            "config": asdict(config)}


def trace_cost_study(dims=(2, 8, 32, 128), batch: int = 256, hidden: int = 128, repeats: int = 5) -> list[dict]:
    """Seconds per trace of a tanh MLP field's Jacobian on a batch: exact (``d`` backward passes)
    against Hutchinson with one probe (one backward pass), per dimension (median of ``repeats``)."""
    out = []
    for d in dims:
        fld = _random_field(d, hidden, 0).float()
        z = torch.randn(batch, d).requires_grad_(True)
        f_out = fld(None, z)
        probes = sample_probes((1, batch, d))
        timings = {}
        # check_batch=False: the study times the trace itself (d vector-Jacobian products), not the
        # one extra product that checks a field for batch mixing (the field here is row-wise).
        for name, fn in (("exact", lambda: divergence_exact(f_out, z, check_batch=False)),
                         ("hutchinson", lambda: divergence_hutchinson(f_out, z, probes))):
            ts = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - start)
            timings[name] = sorted(ts)[len(ts) // 2]
        out.append({"dim": d, "exact_s": timings["exact"], "hutchinson_s": timings["hutchinson"],
                    "backward_passes_exact": d, "backward_passes_hutchinson": 1})
    return out


BIAS_Z_MAX, SLOPE_SLACK, FORMULA_SLACK = 4.0, 0.15, 0.2


def hutchinson_findings(study: dict, bias_z_max: float = BIAS_Z_MAX, slope_slack: float = SLOPE_SLACK,
                        formula_slack: float = FORMULA_SLACK) -> dict:
    """Unbiased (every |z| < ``bias_z_max``), variance ∝ 1/M (slope within ``slope_slack`` of -1),
    and the single-probe variance within ``formula_slack`` (relative) of the formula."""
    unbiased = all(abs(r["bias_z"]) < bias_z_max for r in study["rows"])
    slope_ok = abs(study["slope"] + 1.0) <= slope_slack
    first = study["rows"][0]
    ratio = first["variance"] * first["M"] / study["predicted_single_variance"]
    formula_ok = abs(ratio - 1.0) <= formula_slack
    return {"unbiased": unbiased, "slope_ok": slope_ok, "formula_ratio": ratio, "formula_ok": formula_ok,
            "holds": unbiased and slope_ok and formula_ok}


@claim(
    id="cnf-hutchinson-variance",
    claim="Hutchinson's trace estimator (as in a CNF's divergence) is unbiased and its variance falls as 1/M "
          "with M probes, as its formula predicts",
    source="Hutchinson 1989; Grathwohl et al. 2019 (FFJORD), sec. 3.1",
    published="E[εᵀAε] = tr(A); Var = 2(‖S‖_F² − Σ A_ii²)/M for Rademacher probes, S = (A+Aᵀ)/2",
    lesson="08",
    threshold=Threshold(
        f"|mean − tr(A)| < {BIAS_Z_MAX:g} standard errors at every M; slope of log variance against log M "
        f"within ±{SLOPE_SLACK:g} of −1; single-probe variance within {FORMULA_SLACK:.0%} of the formula",
        kind="course",
        why="the published statements are exact (unbiased, 1/M, a closed-form variance); the slacks "
            "allow only the sampling error of a finite number of estimates"),
)
def measure_hutchinson_variance(quick: bool) -> Measurement:
    config = QUICK_TRACE if quick else FULL_TRACE
    study = trace_estimator_study(config)
    f = hutchinson_findings(study)
    worst = max(abs(r["bias_z"]) for r in study["rows"])
    measured = (f"d={config.dim}, {config.repeats} estimates per M: largest bias {worst:.1f} standard errors; "
                f"log-variance vs log-M slope {study['slope']:.2f}; single-probe variance / formula "
                f"{f['formula_ratio']:.2f}")
    return Measurement(measured, ClaimVerdict.HOLDS if f["holds"] else ClaimVerdict.DOES_NOT_HOLD,
                       {"exact_trace": study["exact"], "rows": study["rows"], **f})


# --- a CNF on two moons -------------------------------------------------------------------------

@dataclass(frozen=True)
class FlowConfig:
    """Training settings of the two-moons CNF (hashable, so runs can be cached)."""

    n_train: int = 4000
    n_test: int = 1000
    iterations: int = 1500
    batch: int = 256
    lr: float = 1e-2
    hidden: tuple[int, ...] = (64, 64)
    trace: str = "hutchinson"
    n_probes: int = 1
    method: str = "dopri5"
    tol: float = 1e-3
    gradient: str = "adjoint"
    seed: int = 0


QUICK_FLOW = FlowConfig(iterations=120, batch=128)
"""Quick mode: 120 Adam steps on batches of 128 (a rough fit: the moons show, not sharply)."""
FULL_FLOW = FlowConfig()


@dataclass
class FlowRun:
    config: FlowConfig
    gradient: str
    model: CNF
    losses: list[float] = field(default_factory=list)
    nfe_forward: list[int] = field(default_factory=list)
    nfe_backward: list[int] = field(default_factory=list)
    seconds: float = 0.0
    test_nll: float = float("nan")
    gaussian_test_nll: float = float("nan")
    test_nfe: int = 0


def gaussian_nll(train: torch.Tensor, test: torch.Tensor) -> float:
    """Mean negative log-likelihood (nats) on ``test`` of the Gaussian fitted to ``train`` by maximum
    likelihood: the baseline any flow must beat (an affine flow can represent exactly this)."""
    mean = train.mean(0)
    cov = torch.cov((train - mean).T, correction=0)
    dist = torch.distributions.MultivariateNormal(mean, covariance_matrix=cov)
    return -dist.log_prob(test).mean().item()


_FLOW_CACHE: dict[FlowConfig, FlowRun] = {}


def train_flow(config: FlowConfig = QUICK_FLOW, *, progress: bool = False) -> FlowRun:
    """Fit a CNF to two moons by maximum likelihood (Adam); cached per configuration.

    Logs the training NLL, forward NFE and (with the adjoint) backward NFE per
    iteration; then measures the test NLL with the exact trace at the same tolerance,
    against the best Gaussian's.
    """
    if config in _FLOW_CACHE:
        return _FLOW_CACHE[config]
    from nodecourse.training import train_epochs

    gradient = resolve_gradient(config.gradient)
    x_train = two_moons(config.n_train, seed=config.seed)
    x_test = two_moons(config.n_test, seed=config.seed + 1000)
    torch.manual_seed(config.seed)
    model = CNF(2, config.hidden, trace=config.trace, n_probes=config.n_probes, method=config.method,
                rtol=config.tol, atol=config.tol, gradient=gradient)
    gen = torch.Generator().manual_seed(config.seed)
    run = FlowRun(config, gradient, model)

    def fresh_batch():  # each "epoch" of the loop is one step on a freshly drawn batch
        yield torch.randint(0, config.n_train, (config.batch,), generator=gen)

    def loss_on_batch(idx):
        return -model.log_prob(x_train[idx], generator=gen).mean(), {}

    def on_epoch(row, model):
        stats = model.last_stats  # read after backward: the adjoint adds its backward NFE there
        run.losses.append(row["loss"])
        run.nfe_forward.append(int(stats["nfe"]))
        run.nfe_backward.append(int(stats.get("nfe_backward", 0)))

    start = time.perf_counter()
    train_epochs(model, loss_on_batch, fresh_batch, epochs=config.iterations,
                 optimizer=torch.optim.Adam(model.parameters(), lr=config.lr), on_epoch=on_epoch,
                 progress=progress, desc="CNF on two moons")
    run.seconds = time.perf_counter() - start
    model.dynamics.trace = "exact"  # evaluation: no estimator noise in the reported likelihood
    with torch.no_grad():
        run.test_nll = -model.log_prob(x_test).mean().item()
    run.test_nfe = int(model.last_stats["nfe"])
    model.dynamics.trace = config.trace
    run.gaussian_test_nll = gaussian_nll(x_train, x_test)
    _FLOW_CACHE[config] = run
    return run


@torch.no_grad()
def density_grid(model: CNF, lim: float = 2.5, n: int = 80) -> dict:
    """``log p`` on an ``n`` x ``n`` grid over ``[-lim, lim]²`` (exact trace): ``{"x", "y", "logp", "nfe"}``
    with ``logp`` of shape ``(n, n)`` (rows follow ``y``)."""
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
    return {"x": axis.cpu(), "y": axis.cpu(), "logp": logp.cpu(), "nfe": int(model.last_stats["nfe"])}
