"""Lesson 3's studies: the annulus models trained over seeds, and the 1-D fits judged as flows.

Each study is decorated with :func:`~nodecourse.lessons.study.cached_study` (one run per configuration), so
the figures, the findings and the ledger rows read the same runs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

from nodecourse.data import annulus, negation
from nodecourse.lessons.lesson03.bounds import abs_data
from nodecourse.lessons.lesson03.config import (
    ABS_MODELS,
    ANNULUS_MODELS,
    NEGATION_MODELS,
    RESOLVE_CHECK_TOL,
    RESOLVE_TOL,
    AbsConfig,
    AnnulusConfig,
    NegationConfig,
)
from nodecourse.lessons.study import cached_study
from nodecourse.measure import CircleProbe, probe_circles
from nodecourse.models import (
    FitLog,
    augmented_node,
    count_parameters,
    fit_augmented,
    matched_resnet,
    plain_node,
    sign_accuracy,
)

__all__ = [
    "AnnulusRun",
    "FlowFit",
    "abs_study",
    "annulus_study",
    "build_abs_model",
    "build_annulus_model",
    "build_negation_model",
    "fit_flow",
    "negation_study",
    "one_step_diagnostics",
    "resolve_accurately",
    "train_annulus_model",
]


def resolve_accurately(model: torch.nn.Module, x: torch.Tensor, tol: float) -> tuple[torch.Tensor, dict]:
    """The model's output with its flow solved by dopri5 at rtol = atol = ``tol``, in float64.

    A copy of the model is used (the trained one keeps its solver and dtype). Returns
    ``(output (n, out_dim) float64, solver stats)``.
    """
    m = copy.deepcopy(model).double()
    with torch.no_grad():
        z0 = m.flow.augment(x.double())
        sol = m.flow.block.solve(z0, method="dopri5", rtol=tol, atol=tol, step_size=None)
        stats = dict(sol.stats)
        stats["status"] = getattr(sol.status, "name", str(sol.status))
        return m.readout(sol.ys[-1]), stats


def _mse(out: torch.Tensor, y: torch.Tensor) -> float:
    return float(torch.mean((out.double() - y.double()) ** 2))


@dataclass(frozen=True)
class AnnulusRun:
    """One trained model on one seed: its log, sample accuracy and circle probes (by radius).

    Frozen: :func:`annulus_study` caches its runs and hands every caller the same objects, so no field
    can be set to something the next caller would read. (``model`` and ``log`` are shared too.)"""

    model_name: str
    seed: int
    model: torch.nn.Module
    log: FitLog
    n_parameters: int
    sample_accuracy: float
    probes: dict[float, CircleProbe]

    def final_nfe(self, last: int | None = None) -> float:
        """Mean forward NFE per epoch over the last ``last`` epochs (default: the last 10 %, at least 1)."""
        k = last or max(1, len(self.log.nfe) // 10)
        return sum(self.log.nfe[-k:]) / k

    def mean_nfe(self) -> float:
        """Mean forward NFE per epoch over the whole of training (the cost of training it)."""
        return sum(self.log.nfe) / len(self.log.nfe)


def build_annulus_model(name: str, config: AnnulusConfig) -> torch.nn.Module:
    """A fresh NODE, ANODE or ResNet (parameter count matched to the NODE) for ``config``."""
    solver = dict(method=config.method, rtol=config.tol, atol=config.tol)
    if name == "NODE":
        return plain_node(2, hidden=config.hidden, activation=config.activation, **solver)
    if name == "ANODE":
        return augmented_node(2, config.augment_dim, hidden=config.hidden, activation=config.activation, **solver)
    if name == "ResNet":
        target = count_parameters(plain_node(2, hidden=config.hidden, activation=config.activation))
        return matched_resnet(2, target, n_blocks=config.resnet_blocks, activation=config.activation)
    raise ValueError(f"model name {name!r} is unknown; use one of {ANNULUS_MODELS}")


def train_annulus_model(
    name: str, seed: int, config: AnnulusConfig, *, device=None, progress: bool = False
) -> AnnulusRun:
    """Train model ``name`` on the annulus drawn with ``seed`` (weights seeded too) and probe it."""
    dtype = getattr(torch, config.dtype)
    x, y = annulus(config.n_inner, config.n_outer, seed=seed, dtype=dtype, device=device)
    torch.manual_seed(seed)
    model = build_annulus_model(name, config)
    log = fit_augmented(
        model,
        x,
        y,
        epochs=config.epochs,
        lr=config.lr,
        batch_size=config.batch_size,
        loss=config.loss,
        seed=seed,
        progress=progress,
        desc=f"{name} seed {seed}",
    )
    probes = probe_circles(model, config.probe_radii, n_points=config.probe_points)
    return AnnulusRun(
        name, seed, model, log, count_parameters(model), sign_accuracy(model, x, y), {p.radius: p for p in probes}
    )


@cached_study
def annulus_study(config: AnnulusConfig, progress: bool = False) -> tuple[AnnulusRun, ...]:
    """Train NODE, ANODE and ResNet on every seed of ``config``; cached per configuration
    (``progress`` only shows a bar, it is not part of the cache key)."""
    from tqdm.auto import tqdm

    jobs = [(name, seed) for seed in config.seeds for name in ANNULUS_MODELS]
    return tuple(
        train_annulus_model(name, seed, config)
        for name, seed in tqdm(jobs, desc="annulus runs", disable=not progress, leave=False)
    )


@dataclass
class FlowFit:
    """One model fitted to a 1-D target on one seed, and how it does when its flow is solved accurately.

    ``mse``: as trained (the training solver, float32); ``mse_resolved``: the same field solved with
    dopri5 at :data:`RESOLVE_TOL` in float64; ``resolve_error``: |MSE at :data:`RESOLVE_TOL` - MSE at
    :data:`RESOLVE_CHECK_TOL`|; ``resolve_nfe`` and ``resolve_status`` of the first re-solve.
    ``min_slope`` and ``h_lip`` (1-D flows only, else ``None``): the smallest derivative of the trained
    solver's map x -> z(1) over [-1, 1] (negative: it folds, so it is not invertible), and the step
    times the largest |f'| at the states that solve visits.
    """

    model_name: str
    seed: int
    model: torch.nn.Module
    log: FitLog
    mse: float
    mse_resolved: float
    resolve_error: float
    resolve_nfe: int
    resolve_status: str
    min_slope: float | None = None
    h_lip: float | None = None


def one_step_diagnostics(model: torch.nn.Module, step: float, n_dense: int = 2001) -> tuple[float, float]:
    """For a 1-D flow model with a fixed-step solver: ``(min slope of x -> z(1) on [-1, 1], h * Lip)``.

    The slope is the exact derivative of the trained solver's map (autograd through the steps) on
    ``n_dense`` points; Lip is the largest |f'(z)| at the stage states that same solve visits.
    """
    field = model.flow.field
    visited: list[torch.Tensor] = []
    hook = field.register_forward_hook(lambda mod, inp, out: visited.append(inp[1].detach()))
    try:
        x = torch.linspace(-1.0, 1.0, n_dense, dtype=next(model.parameters()).dtype).unsqueeze(1)
        x.requires_grad_(True)
        z1 = model.flow(x)
    finally:
        hook.remove()
    slope = torch.autograd.grad(z1.sum(), x)[0]  # rows are independent: d z1_i / d x_i
    states = torch.cat(visited).reshape(-1, 1).requires_grad_(True)
    fprime = torch.autograd.grad(field(None, states).sum(), states)[0]
    return float(slope.min()), float(step * fprime.abs().max())


def fit_flow(
    name: str,
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    seed: int,
    epochs: int,
    lr: float,
    step_size: float | None,
) -> FlowFit:
    """Train ``model`` on ``(x, y)`` (MSE, Adam, full batch), then judge it as a flow (see :class:`FlowFit`)."""
    log = fit_augmented(model, x, y, epochs=epochs, lr=lr, loss="mse", classification=False, seed=seed)
    with torch.no_grad():
        mse = _mse(model(x), y)
    out, stats = resolve_accurately(model, x, RESOLVE_TOL)
    tight, _ = resolve_accurately(model, x, RESOLVE_CHECK_TOL)
    mse_resolved = _mse(out, y)
    slope = hlip = None
    if model.flow.augment_dim == 0 and x.shape[1] == 1 and step_size is not None:
        slope, hlip = one_step_diagnostics(model, step_size)
    return FlowFit(
        name,
        seed,
        model,
        log,
        mse,
        mse_resolved,
        abs(mse_resolved - _mse(tight, y)),
        int(stats.get("nfe", 0)),
        str(stats.get("status")),
        slope,
        hlip,
    )


def build_negation_model(name: str, config: NegationConfig) -> torch.nn.Module:
    solver = dict(method=config.method, rtol=config.tol, atol=config.tol, step_size=config.step_size)
    common = dict(hidden=config.hidden, activation=config.activation, **solver)
    if name == "1-D flow":
        return plain_node(1, readout="projection", **common)
    if name == "R^2 flow + projection":
        return augmented_node(1, 1, readout="projection", **common)
    if name == "1-D flow + linear":
        return plain_node(1, readout="linear", **common)
    raise ValueError(f"model name {name!r} is unknown; use one of {NEGATION_MODELS}")


@cached_study
def negation_study(config: NegationConfig) -> dict[int, dict[str, FlowFit]]:
    """Fit h(x) = -x with each model of :data:`NEGATION_MODELS` on every seed: seed -> name -> FlowFit."""
    x, y = negation(config.n_points, dtype=getattr(torch, config.dtype))
    out: dict[int, dict[str, FlowFit]] = {}
    for seed in config.seeds:
        out[seed] = {}
        for name in NEGATION_MODELS:
            torch.manual_seed(seed)
            model = build_negation_model(name, config)
            out[seed][name] = fit_flow(
                name, model, x, y, seed=seed, epochs=config.epochs, lr=config.lr, step_size=config.step_size
            )
    return out


def build_abs_model(name: str, config: AbsConfig) -> torch.nn.Module:
    common = dict(hidden=config.hidden, activation=config.activation, method="rk4", step_size=config.step_size)
    if name == "R^2 flow + linear":
        return augmented_node(1, 1, readout="linear", **common)
    if name == "1-D flow + linear":
        return plain_node(1, readout="linear", **common)
    raise ValueError(f"model name {name!r} is unknown; use one of {ABS_MODELS}")


@cached_study
def abs_study(config: AbsConfig) -> dict[int, dict[str, FlowFit]]:
    """Fit h(x) = |x| with each model of :data:`ABS_MODELS` on every seed: seed -> name -> FlowFit."""
    x, y = abs_data(config.n_points, getattr(torch, config.dtype))
    out: dict[int, dict[str, FlowFit]] = {}
    for seed in config.seeds:
        out[seed] = {}
        for name in ABS_MODELS:
            torch.manual_seed(seed)
            out[seed][name] = fit_flow(
                name,
                build_abs_model(name, config),
                x,
                y,
                seed=seed,
                epochs=config.epochs,
                lr=config.lr,
                step_size=config.step_size,
            )
    return out
