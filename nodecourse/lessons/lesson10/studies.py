"""Lesson 10's studies: the functions that measure, each cached by :func:`~nodecourse.lessons.study.cached_study`
so the notebook's figures, its findings and the ledger rows read the same runs.

Why this module is long: every lesson package keeps its measurements in one module (``lessonNN/studies.py``),
which the notebook, the findings and the ledger rows call; lesson 10's studies are training with regularisers,
seminorms, exact gradients, the gradient routes, reversible memory, stability and the explorer's grid.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from nodecourse.lessons.lesson10.config import (
    EXPLORE_REFERENCE_TOL,
    EXPLORER_ROUTES,
    EXPLORER_WEIGHTS,
    QUICK_EXACT,
    QUICK_SEMINORM,
    QUICK_TRAIN,
    TRAINED_STEPS,
    ExactConfig,
    MoonsTrainConfig,
    SeminormTask,
    SeminormTaskConfig,
)
from nodecourse.lessons.study import cached_study
from nodecourse.measure import DecayFeed, MemorySweep, analytic_gradient, measure_peak, memory_sweep, saved_tensor_bytes
from nodecourse.models import MLPField, MoonsODE
from nodecourse.solvers import REVERSIBLE_SOLVERS, ReversibleStabilityWarning, amplification, odeint
from nodecourse.training import seeded_batches, train_epochs

# REVERSIBLE_SOLVERS: the solvers the reversible routes run, re-exported for the lesson
__all__ = [
    "REVERSIBLE_SOLVERS",
    "ExactRow",
    "MoonsRun",
    "Route",
    "SeminormCount",
    "SeminormTaskResult",
    "StabilityCase",
    "TrainedStability",
    "exact_study",
    "explore",
    "explorer_grid",
    "moons",
    "parasitic_root",
    "reversible_memory_study",
    "route_table",
    "seminorm_study",
    "stability_study",
    "train_moons",
    "trained_model",
    "trained_stability",
    "training_study",
]

# ----------------------------------------------------------------------------------------------
# Training a neural ODE on two moons, with and without regularisers


def moons(n: int, seed: int, noise: float = 0.1):
    """``(x_train (n, 2), y_train (n,), x_test (n, 2), y_test (n,))``: scikit-learn's two moons, float32."""
    from sklearn.datasets import make_moons

    x, y = make_moons(n_samples=2 * n, noise=noise, random_state=seed)
    x, y = torch.tensor(x, dtype=torch.float32), torch.tensor(y)
    return x[:n], y[:n], x[n:], y[n:]


def tenth_means(nfe: tuple[int, ...]) -> tuple[float, float]:
    """Mean of the first tenth and of the last tenth of a per-step NFE record."""
    k = max(1, len(nfe) // 10)
    return sum(nfe[:k]) / k, sum(nfe[-k:]) / k


@dataclass(frozen=True)
class MoonsRun:
    """One training run: forward NFE per step, test accuracy, the test solve's NFE, training seconds."""

    setting: str
    kinetic: float
    jacobian: float
    seed: int
    nfe: tuple[int, ...]
    accuracy: float
    test_nfe: int
    seconds: float

    @property
    def first_tenth(self) -> float:
        """Mean forward NFE over the first tenth of training."""
        return tenth_means(self.nfe)[0]

    @property
    def last_tenth(self) -> float:
        """Mean forward NFE over the last tenth of training."""
        return tenth_means(self.nfe)[1]


def train_moons(
    config: MoonsTrainConfig, seed: int, kinetic: float, jacobian: float, setting: str = ""
) -> tuple[MoonsODE, MoonsRun]:
    """Train one :class:`~nodecourse.models.MoonsODE` (full-batch Adam); returns it and its :class:`MoonsRun`."""
    xtr, ytr, xte, yte = moons(config.n_points, seed, config.noise)
    torch.manual_seed(seed)
    model = MoonsODE(config.hidden, config.tol, kinetic, jacobian, seed)
    nfe: list[int] = []

    def loss_on_batch(idx):
        logits = model(xtr[idx])
        nfe.append(int(model.block.last_stats["nfe"]))
        return F.cross_entropy(logits, ytr[idx]) + model.penalty(), {}

    started = time.perf_counter()
    train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(xtr), None, seed=seed),
        epochs=config.steps,
        optimizer=torch.optim.Adam(model.parameters(), lr=config.lr),
    )
    seconds = time.perf_counter() - started
    with torch.no_grad():
        z = model.block(model.lift(xte))
        accuracy = float((model.head(z).argmax(1) == yte).float().mean())
    return model, MoonsRun(
        setting, kinetic, jacobian, seed, tuple(nfe), accuracy, int(model.block.last_stats["nfe"]), seconds
    )


@cached_study
def train_run(config: MoonsTrainConfig, setting: str, seed: int) -> tuple[MoonsODE, MoonsRun]:
    """One training run of ``setting`` (a name in ``config.settings``) on ``seed``: the model and its run."""
    name, kinetic, jacobian = next(s for s in config.settings if s[0] == setting)
    return train_moons(config, seed, kinetic, jacobian, name)


def training_study(
    config: MoonsTrainConfig = QUICK_TRAIN, settings: tuple[str, ...] | None = None, progress: bool = False
) -> tuple[MoonsRun, ...]:
    """Every seed of ``config`` for each of ``settings`` (default: all of ``config.settings``). Each run is a
    cached study, so a progress bar never means a second training; the models: :func:`trained_model`."""
    from tqdm.auto import tqdm

    names = [s[0] for s in config.settings] if settings is None else list(settings)
    pairs = [(name, seed) for name in names for seed in config.seeds]
    return tuple(
        train_run(config, name, seed)[1]
        for name, seed in tqdm(pairs, desc="training on two moons", disable=not progress, leave=False)
    )


def trained_model(config: MoonsTrainConfig, setting: str, seed: int) -> MoonsODE:
    """The model :func:`training_study` trained for ``(setting, seed)`` (trains it if needed)."""
    return train_run(config, setting, seed)[0]


# ----------------------------------------------------------------------------------------------
# The seminorm adjoint


def _backward_nfe_ours(field: nn.Module, z0, loss, tol: float, norm) -> int:
    sol = odeint(
        field, z0, torch.tensor([0.0, 1.0]), rtol=tol, atol=tol, gradient="adjoint", adjoint_options={"norm": norm}
    )
    loss(sol.ys[-1]).backward()
    field.zero_grad(set_to_none=True)
    return int(sol.stats["nfe_backward"])


def _backward_nfe_torchdiffeq(field: nn.Module, z0, loss, tol: float, norm) -> int:
    import torchdiffeq

    calls = [0]

    class Counting(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = field

        def forward(self, t, z):
            calls[0] += 1
            return self.inner(t, z)

    kw = {"adjoint_options": {"norm": norm}} if norm else {}
    out = torchdiffeq.odeint_adjoint(
        Counting(), z0, torch.tensor([0.0, 1.0]), rtol=tol, atol=tol, method="dopri5", **kw
    )
    forward = calls[0]
    loss(out[-1]).backward()
    field.zero_grad(set_to_none=True)
    return calls[0] - forward


@dataclass(frozen=True)
class SeminormCount:
    """Backward NFE of one gradient, full norm and seminorm, ours and torchdiffeq's (one seed of a task)."""

    seed: int
    ours_full: int
    ours_seminorm: int
    torchdiffeq_full: int
    torchdiffeq_seminorm: int

    def reduction(self, library: str) -> float:
        """``1 - NFE(seminorm) / NFE(full)`` for ``library`` ("nodecourse" or "torchdiffeq")."""
        full, semi = (
            (self.ours_full, self.ours_seminorm)
            if library == "nodecourse"
            else (self.torchdiffeq_full, self.torchdiffeq_seminorm)
        )
        return 1 - semi / full


@dataclass(frozen=True)
class SeminormTaskResult:
    """One task of the seminorm study: its counts per seed and, per library, the mean reduction."""

    task: SeminormTask
    counts: tuple[SeminormCount, ...]

    def reduction(self, library: str) -> float:
        """The task's value: the mean over seeds of the reduction of ``library``."""
        return sum(c.reduction(library) for c in self.counts) / len(self.counts)


def _task_problem(task: SeminormTask, seed: int, train: MoonsTrainConfig):
    """``(field, z0, loss)`` of ``task`` on ``seed``."""
    if task.kind == "moons":
        model = trained_model(train, "none", seed)
        x, y, _, _ = moons(train.n_points, seed, train.noise)
        return model.field, model.lift(x), lambda z: task.loss_scale * F.cross_entropy(model.head(z), y)
    torch.manual_seed(seed)
    field = MLPField(task.dim, hidden=(task.width,), activation="tanh")
    z0 = torch.randn(task.batch, task.dim)
    return field, z0, lambda z: z.pow(2).sum()


@cached_study
def seminorm_study(
    config: SeminormTaskConfig = QUICK_SEMINORM, progress: bool = False
) -> tuple[SeminormTaskResult, ...]:
    """Per task of ``config`` and per seed (random fields: ``config.seeds``; moons: the training seeds):
    backward NFE of one gradient with the full norm and the seminorm, our adjoint and torchdiffeq's."""
    from tqdm.auto import tqdm

    out = []
    for task in tqdm(config.tasks, desc="seminorm tasks", disable=not progress, leave=False):
        seeds = config.train.seeds if task.kind == "moons" else config.seeds
        counts = []
        for seed in seeds:
            field, z0, loss = _task_problem(task, seed, config.train)
            n = [
                fn(field, z0, loss, task.tol, norm)
                for fn in (_backward_nfe_ours, _backward_nfe_torchdiffeq)
                for norm in (None, "seminorm")
            ]
            counts.append(SeminormCount(seed, *n))
        out.append(SeminormTaskResult(task, tuple(counts)))
    return tuple(out)


# ----------------------------------------------------------------------------------------------
# Reversible Heun: exactness, the route table, memory, stability


def _flat_grads(field, y0, **solve):
    field.zero_grad(set_to_none=True)
    y = y0.clone().requires_grad_(True)
    sol = odeint(field, y, torch.tensor([0.0, 1.0], dtype=y0.dtype), **solve)
    sol.ys[-1].pow(2).sum().backward()
    return torch.cat([y.grad.flatten()] + [p.grad.flatten() for p in field.parameters()]), sol


@dataclass(frozen=True)
class ExactRow:
    """One random field of the exactness study: relative gradient errors and work (forward + backward NFE)."""

    seed: int
    reversible_error: float  # reversible vs backprop through the same reversible Heun steps
    adjoint_error: float  # dopri5 adjoint vs backprop through dopri5 at the same tolerance
    reversible_nfe: int
    adjoint_nfe: int


@cached_study
def exact_study(config: ExactConfig = QUICK_EXACT) -> tuple[ExactRow, ...]:
    """Per seed: a random MLP field (float64): reversible vs backprop through the same steps, and the
    dopri5 adjoint vs backprop through dopri5 (its own discretisation) at ``adjoint_tol``."""
    rows = []
    h = 1.0 / config.steps
    for seed in config.seeds:
        torch.manual_seed(seed)
        field = MLPField(config.dim, hidden=(32,), activation="tanh").double()
        y0 = torch.randn(config.batch, config.dim, dtype=torch.float64)
        rev = dict(method="reversible_heun", step_size=h)
        g_bp, _ = _flat_grads(field, y0, gradient="backprop", **rev)
        g_rev, sol_rev = _flat_grads(field, y0, gradient="reversible", **rev)
        tol = dict(rtol=config.adjoint_tol, atol=config.adjoint_tol)
        g_dbp, _ = _flat_grads(field, y0, gradient="backprop", **tol)
        g_adj, sol_adj = _flat_grads(field, y0, gradient="adjoint", **tol)
        s_rev, s_adj = sol_rev.stats, sol_adj.stats
        rows.append(
            ExactRow(
                seed,
                float((g_rev - g_bp).norm() / g_bp.norm()),
                float((g_adj - g_dbp).norm() / g_dbp.norm()),
                s_rev["nfe"] + s_rev["nfe_backward"],
                s_adj["nfe"] + s_adj["nfe_backward"],
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class Route:
    """One gradient route on lesson 4's controlled problem."""

    name: str
    error_vs_closed_form: float
    error_vs_own_fd: float  # against central finite differences of the route's own discretisation
    nfe_forward: int
    nfe_backward: int
    kib_kept: float  # what autograd keeps between forward and backward
    seconds: float


@cached_study
def route_table(
    lam: float = -1.0, T: float = 1.0, steps: int = 100, *, fd_eps: float = 1e-6, rtol: float = 1e-8
) -> tuple[Route, ...]:
    """Lesson 4's gradient-route table on ``dz1/dt = lam z1, dz2/dt = theta z1``, ``L = z2(T)`` (float64),
    with reversible Heun added: per route the relative error of ``dL/d(z10, z20, lam, theta)`` against the
    analytic gradient and against central finite differences *of that route's own discretisation*,
    forward and backward NFE, the bytes autograd keeps for backward, and seconds."""
    theta = 1.0
    ref = analytic_gradient(lam, theta, T)[:4]
    dopri = dict(method="dopri5", rtol=rtol, atol=rtol)
    heun = dict(method="reversible_heun", step_size=T / steps)
    routes = [
        ("backprop (dopri5)", dict(dopri, gradient="backprop")),
        ("checkpoint (dopri5)", dict(dopri, gradient="checkpoint")),
        ("adjoint (dopri5)", dict(dopri, gradient="adjoint")),
        ("adjoint + seminorm", dict(dopri, gradient="adjoint", adjoint_options={"norm": "seminorm"})),
        ("backprop (reversible Heun)", dict(heun, gradient="backprop")),
        ("reversible (reversible Heun)", dict(heun, gradient="reversible")),
    ]

    def loss(values, solve):
        field = DecayFeed(values[2], values[3])
        z0 = torch.tensor(values[:2], dtype=torch.float64, requires_grad=True)
        sol = odeint(field, z0, torch.tensor([0.0, T], dtype=torch.float64), **solve)
        return sol.ys[-1][1], (z0, field.lam, field.theta), sol

    def rel(g, r):
        return math.sqrt(sum((a - b) ** 2 for a, b in zip(g, r))) / math.sqrt(sum(b * b for b in r))

    base = [1.0, 0.0, lam, theta]
    table = []
    for name, solve in routes:
        started = time.perf_counter()
        holder = {}

        def run():  # the forward pass: what it keeps for the backward pass is what grows with the steps
            holder["out"] = loss(base, solve)

        kept = saved_tensor_bytes(run)
        L, leaves, sol = holder.pop("out")
        grads = torch.autograd.grad(L, leaves)
        seconds = time.perf_counter() - started
        g = [float(v) for v in torch.cat([grads[0], grads[1].reshape(1), grads[2].reshape(1)])]
        plain = {k: v for k, v in solve.items() if k not in ("gradient", "adjoint_options")}
        fd = []
        for i in range(4):
            up, down = list(base), list(base)
            step = fd_eps * max(1.0, abs(base[i]))
            up[i] += step
            down[i] -= step
            with torch.no_grad():
                fd.append(float(loss(up, plain)[0] - loss(down, plain)[0]) / (2 * step))
        table.append(
            Route(
                name,
                rel(g, ref),
                rel(g, fd),
                int(sol.stats["nfe"]),
                int(sol.stats.get("nfe_backward", 0)),
                round(kept / 1024, 1),
                seconds,
            )
        )
    return tuple(table)


@cached_study
def reversible_memory_study(quick: bool = True) -> MemorySweep:
    """Peak memory of forward + backward, reversible Heun, backprop and the reversible route."""
    steps = (8, 16, 64) if quick else (20, 40, 80, 160)
    return memory_sweep(method="reversible_heun", modes=("backprop", "reversible"), steps=steps)


@dataclass(frozen=True)
class StabilityCase:
    """``y' = lam y`` on ``[0, T]`` at step ``h``: reversible Heun's roots and errors, rk4's error beside them.

    ``parasitic_growth`` is ``|mu_-|^(T/h)``, the parasitic root's growth over the horizon; errors are relative
    to ``|y(T)|`` (``solution_size``); ``inf`` marks an overflow."""

    lam: complex
    h: float
    T: float
    max_root: float  # max |mu| of one step
    parasitic_growth: float
    solution_size: float  # |y(T)| = exp(Re(lam) T)
    heun_error: float  # relative to solution_size
    rk4_error: float

    @property
    def heun_absolute_error(self) -> float:
        """Reversible Heun's error at ``T`` in absolute terms (the relative error times ``|y(T)|``)."""
        return self.heun_error * self.solution_size

    @property
    def label(self) -> str:
        """``lam`` as the lesson writes it: ``-1``, ``2i``."""
        return f"{self.lam.imag:g}i" if self.lam.imag else f"{self.lam.real:g}"


def parasitic_root(x: complex) -> complex:
    """The parasitic eigenvalue ``mu_- = x - sqrt(x^2 + 1)`` of one reversible Heun step at ``x = h lam``."""
    import cmath

    return x - cmath.sqrt(x * x + 1)


@cached_study
def stability_study(
    lams: tuple[complex, ...] = (-1.0, 1.0, -5.0, 2j), hs: tuple[float, ...] = (0.1, 0.01), T: float = 10.0
) -> tuple[StabilityCase, ...]:
    """``y' = lam y``, ``y(0) = 1``, over ``[0, T]`` with reversible Heun and rk4 at each step ``h`` of ``hs``
    (a complex ``lam`` as a 2-D real rotation); float64."""
    cases = []
    for h in hs:
        for lam in lams:
            lam = complex(lam)
            if lam.imag:
                A = torch.tensor([[lam.real, -lam.imag], [lam.imag, lam.real]], dtype=torch.float64)
                y0 = torch.tensor([1.0, 0.0], dtype=torch.float64)
                exact = math.exp(lam.real * T) * torch.tensor(
                    [math.cos(lam.imag * T), math.sin(lam.imag * T)], dtype=torch.float64
                )
            else:
                A = torch.tensor([[lam.real]], dtype=torch.float64)
                y0 = torch.ones(1, dtype=torch.float64)
                exact = torch.tensor([math.exp(lam.real * T)], dtype=torch.float64)
            errors = []
            for method in ("reversible_heun", "rk4"):
                # The study measures the growth ReversibleStabilityWarning predicts: the table shows it.
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore", ReversibleStabilityWarning)
                    sol = odeint(
                        lambda t, y: y @ A.T,
                        y0,
                        torch.tensor([0.0, T], dtype=torch.float64),
                        method=method,
                        step_size=h,
                        throw=False,
                    )
                err = float((sol.ys[-1] - exact).norm() / exact.norm())
                errors.append(err if math.isfinite(err) else math.inf)
            growth = abs(parasitic_root(h * lam)) ** (T / h)
            cases.append(StabilityCase(lam, h, T, amplification(h * lam), growth, float(exact.norm()), *errors))
    return tuple(cases)


@dataclass(frozen=True)
class TrainedStability:
    """Reversible Heun on one trained moons field: the extreme real parts of ``df/dz`` along the test
    trajectories, and the relative error of ``z(1)`` at each number of ``steps`` (against dopri5 at 1e-10)."""

    setting: str
    seed: int
    most_contracting: float  # c: the most negative real part
    most_expanding: float
    steps: tuple[int, ...]
    errors: tuple[float, ...]

    @property
    def parasitic_bound(self) -> float:
        """``exp(|c| T)`` with ``T = 1`` (1 when nothing contracts)."""
        return math.exp(max(0.0, -self.most_contracting))


@cached_study
def trained_stability(
    config: MoonsTrainConfig = QUICK_TRAIN, steps: tuple[int, ...] = TRAINED_STEPS, n_times: int = 11
) -> tuple[TrainedStability, ...]:
    """Reversible Heun on the trained moons models (every setting and seed of ``config``, float64 copies).

    Per model: the most negative real part ``c`` of the eigenvalues of ``df/dz`` over the test inputs at
    ``n_times`` points of an accurate trajectory (the fastest contracting mode, whose parasitic partner
    reversible Heun amplifies by up to ``exp(|c| T)``, ``T = 1``), the largest real part beside it, and
    the relative error of ``z(1)`` from reversible Heun at each number of ``steps`` against dopri5 at 1e-10.
    """
    rows = []
    for name in (s[0] for s in config.settings):
        for seed in config.seeds:
            model = trained_model(config, name, seed)
            field = copy.deepcopy(model.field).double()
            _, _, x_test, _ = moons(config.n_points, seed, config.noise)
            z0 = model.lift(x_test).double()
            ts = torch.linspace(0.0, 1.0, n_times, dtype=torch.float64)
            with torch.no_grad():
                path = odeint(field, z0, ts, rtol=1e-10, atol=1e-10).ys
            real = []
            for k in range(n_times):
                z = path[k].clone().requires_grad_(True)
                f = field(ts[k], z)
                # (B, d, d): the rows taken apart, as the field treats them
                jac = torch.stack(
                    [torch.autograd.grad(f[:, i].sum(), z, retain_graph=True)[0] for i in range(f.shape[1])], dim=1
                )
                real.append(torch.linalg.eigvals(jac).real)
            real = torch.stack(real)
            errors = []
            for n in steps:
                with torch.no_grad():
                    end = odeint(field, z0, ts[[0, -1]], method="reversible_heun", step_size=1.0 / n).ys[-1]
                errors.append(float((end - path[-1]).norm() / path[-1].norm()))
            rows.append(TrainedStability(name, seed, float(real.min()), float(real.max()), tuple(steps), tuple(errors)))
    return tuple(rows)


# ----------------------------------------------------------------------------------------------
# The explorer's computation


@cached_study
def _explore_model(weight: float, steps: int, seed: int) -> tuple[MoonsODE, MoonsRun]:
    """The moons model trained ``steps`` steps with kinetic and Jacobian weight ``weight`` each (one training
    per weight: every route of the explorer reads the same trained model)."""
    config = MoonsTrainConfig(seeds=(seed,), steps=steps, settings=(("w", weight, weight),))
    return train_moons(config, seed, weight, weight, "w")


@cached_study
def explore(weight: float, route: str, steps: int = 40, seed: int = 0) -> dict:
    """Train the moons model ``steps`` steps with kinetic and Jacobian weight ``weight`` each (once per
    weight), then take one gradient of the training loss with respect to the field's parameters by
    ``route`` ("backprop", "adjoint", "adjoint + seminorm", "checkpoint": dopri5 at the training tolerance;
    "reversible": reversible Heun with as many steps as dopri5 took evaluations on the test set).

    The gradients are taken in float64 on a copy of the trained model. Returns the model's test NFE
    and accuracy, the route's forward and backward NFE, its relative gradient error against an
    accurate solve (backprop through dopri5 at ``EXPLORE_REFERENCE_TOL``) and against backprop through
    the route's own discretisation (the same solver and steps), and the peak memory (KiB) of its forward
    and backward pass (:func:`~nodecourse.measure.measure_peak`: torch's profiler on the CPU).
    A dict keyed by the explorer widget's column names."""
    if route not in EXPLORER_ROUTES:
        raise ValueError(f"route={route!r} is not one of {list(EXPLORER_ROUTES)}")
    trained, run = _explore_model(float(weight), steps, seed)
    field, head = copy.deepcopy(trained.field).double(), copy.deepcopy(trained.head).double()
    params = tuple(field.parameters()) + tuple(head.parameters())
    config = MoonsTrainConfig()
    x, y, _, _ = moons(config.n_points, seed, config.noise)  # the training set _explore_model used
    z0 = trained.lift(x).double()
    t = torch.tensor([0.0, 1.0], dtype=torch.float64)
    tol = trained.block.solver.rtol

    def grad(measure: bool = False, **solve):
        for p in params:
            p.grad = None
        holder = {}

        def run_once():  # forward and backward: the pass whose peak memory is measured
            holder["sol"] = sol = odeint(field, z0, t, **solve)
            F.cross_entropy(head(sol.ys[-1]), y).backward()

        peak = measure_peak(run_once, "cpu") if measure else run_once()
        g = torch.cat([p.grad.flatten() for p in field.parameters()])
        return g, holder["sol"].stats, peak

    accurate = dict(rtol=EXPLORE_REFERENCE_TOL, atol=EXPLORE_REFERENCE_TOL)
    dopri = dict(rtol=tol, atol=tol)
    heun = dict(method="reversible_heun", step_size=1.0 / max(run.test_nfe, 1))
    solve = {
        "backprop": dict(dopri),
        "adjoint": dict(dopri, gradient="adjoint"),
        "adjoint + seminorm": dict(dopri, gradient="adjoint", adjoint_options={"norm": "seminorm"}),
        "checkpoint": dict(dopri, gradient="checkpoint"),
        "reversible": dict(heun, gradient="reversible"),
    }[route]
    own = dict(heun) if route == "reversible" else dict(dopri)  # backprop through the route's own steps
    g_ref, _, _ = grad(**accurate)
    g_own, _, _ = grad(**own)
    g, stats, peak = grad(measure=True, **solve)
    rel = lambda a, b: float((a - b).norm() / b.norm())  # noqa: E731
    return {
        "test NFE": run.test_nfe,
        "accuracy": run.accuracy,
        "NFE fwd": stats["nfe"],
        "NFE bwd": stats.get("nfe_backward", 0),
        "error vs accurate": rel(g, g_ref),
        "error vs own steps": rel(g, g_own),
        "peak KiB": peak / 1024,
    }


def explorer_grid(weights=None, routes=None, steps: int = 40, seed: int = 0, progress: bool = False) -> dict:
    """``{(weight, route): explore(weight, route)}`` over ``weights`` x ``routes`` (default: the explorer's);
    the grid :class:`nodecourse.widgets.CheaperExplorer` shows."""
    from tqdm.auto import tqdm

    weights = EXPLORER_WEIGHTS if weights is None else weights
    routes = EXPLORER_ROUTES if routes is None else routes
    pairs = [(w, r) for w in weights for r in routes]
    return {
        (w, r): explore(w, r, steps, seed)
        for w, r in tqdm(
            pairs, desc="explorer grid (train per weight, one gradient per route)", disable=not progress, leave=False
        )
    }
