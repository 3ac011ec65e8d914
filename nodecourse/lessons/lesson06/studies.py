"""Lesson 6's studies: the functions that measure, each cached per arguments (:func:`cached_study`),
each returning frozen, typed results that the figures, the findings and the ledger rows read."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from nodecourse.deq import (
    DEQ,
    DEQLog,
    DEQModel,
    EquilibriumBlock,
    SolverRun,
    bai_synthetic,
    compare_solvers,
    contraction,
    exact_jacobian_frobenius,
    fit_deq,
    jacobian_regularizer,
)
from nodecourse.lessons.study import cached_study
from nodecourse.measure import saved_tensor_bytes

from .config import HUTCHINSON_DIMS, SOLVER_KINDS, SOLVER_RHOS, DEQTrainConfig, probe_epochs, variants

__all__ = [
    "GradientMemoryPoint",
    "GradientMemoryStudy",
    "HutchinsonCheck",
    "SolverProblemRuns",
    "TrainRun",
    "final_iters",
    "gradient_memory_study",
    "hutchinson_study",
    "solver_study",
    "train_variant",
    "training_study",
]

# --- Anderson vs Picard ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SolverProblemRuns:
    """Every solver's run on one contraction (``kind``, spectral radius ``rho``)."""

    kind: str
    rho: float
    runs: tuple[SolverRun, ...]

    def by_label(self, label: str) -> SolverRun | None:
        """The run labelled ``label`` (``"nodecourse:anderson"``, ``"torchdeq:anderson"``), or None."""
        return next((r for r in self.runs if r.label == label), None)


@cached_study
def solver_study(
    *,
    rhos=SOLVER_RHOS,
    kinds=SOLVER_KINDS,
    tol: float = 1e-8,
    dim: int = 50,
    torchdeq: bool = True,
    torchdeq_budget: float | None = 3.0,
) -> tuple[SolverProblemRuns, ...]:
    """Evaluations of f to ``tol`` relative residual for every solver on every contraction (float64).

    torchdeq's solvers (when installed) get up to ``torchdeq_budget`` times our evaluations.
    """
    return tuple(
        SolverProblemRuns(
            k,
            r,
            tuple(
                compare_solvers(contraction(k, r, dim=dim), tol=tol, torchdeq=torchdeq, torchdeq_budget=torchdeq_budget)
            ),
        )
        for k in kinds
        for r in rhos
    )


# --- Hutchinson -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HutchinsonCheck:
    """The Hutchinson estimate of ||df/dz||_F^2 on one block against the exact value.

    ``std`` is one probe's standard deviation; ``z_score`` the mean's distance from the exact value in
    standard errors (std / sqrt(n_probes)); ``running_mean`` the mean of the first m probes, every 10th m.
    """

    dim: int
    exact: float
    mean: float
    std: float
    rel_error: float
    z_score: float
    running_mean: tuple[float, ...]

    def as_dict(self) -> dict:
        """The numbers, without the running mean (for a row's ``details``)."""
        return {
            "dim": self.dim,
            "exact": self.exact,
            "mean": self.mean,
            "std": self.std,
            "rel_error": self.rel_error,
            "z_score": self.z_score,
        }


@cached_study
def hutchinson_study(
    *, n_probes: int = 20_000, dims=HUTCHINSON_DIMS, seed: int = 0, dtype: torch.dtype = torch.float64
) -> tuple[HutchinsonCheck, ...]:
    """For an equilibrium block per ``dim`` at a random point: the exact ||df/dz||_F^2 and ``n_probes``
    single-probe Hutchinson estimates (one batched VJP: the point is replicated ``n_probes`` times)."""
    out = []
    gen = torch.Generator().manual_seed(seed)
    for dim in dims:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + dim)
            block = EquilibriumBlock(dim, 2, width=32, init_scale=1.0).to(dtype)
        z = torch.randn(1, dim, generator=gen, dtype=dtype)
        x = torch.randn(1, 2, generator=gen, dtype=dtype)
        zr = z.repeat(n_probes, 1).requires_grad_()
        f_out = block(zr, x.repeat(n_probes, 1))
        z1 = z.clone().requires_grad_()
        exact = float(exact_jacobian_frobenius(block(z1, x), z1)[0])
        est = jacobian_regularizer(f_out, zr, 1, reduction="none", generator=gen).detach()  # (n_probes,)
        running = torch.cumsum(est, 0) / torch.arange(1, n_probes + 1, dtype=dtype)
        mean, std = float(est.mean()), float(est.std())
        out.append(
            HutchinsonCheck(
                dim,
                exact,
                mean,
                std,
                abs(mean - exact) / exact,
                abs(mean - exact) / (std / n_probes**0.5),
                tuple(running[::10].tolist()),
            )
        )
    return tuple(out)


# --- Implicit vs unrolled gradients and their memory -----------------------------------------------


@dataclass(frozen=True)
class GradientMemoryPoint:
    """At ``iterations`` forward Picard iterations: bytes kept for backward and the gradient's relative
    error against the 200-step unrolled reference, implicit and unrolled."""

    iterations: int
    implicit_bytes: int
    unrolled_bytes: int
    implicit_grad_error: float
    unrolled_grad_error: float


@dataclass(frozen=True)
class GradientMemoryStudy:
    """``agreement``: relative difference of the implicit (tol 1e-12) and 200-step unrolled gradients;
    ``points``: memory and gradient error per number of forward iterations."""

    agreement: float
    forward_iters: int
    backward_iters: int
    points: tuple[GradientMemoryPoint, ...]

    @property
    def implicit_memory_flat(self) -> bool:
        return len({p.implicit_bytes for p in self.points}) == 1

    @property
    def unrolled_memory_grows(self) -> bool:
        return all(a.unrolled_bytes < b.unrolled_bytes for a, b in zip(self.points, self.points[1:]))


@cached_study
def gradient_memory_study(
    *,
    iterations=(5, 10, 20, 40, 80),
    state_dim: int = 16,
    batch: int = 32,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
) -> GradientMemoryStudy:
    """On one contractive equilibrium block (float64): the implicit gradient (tol 1e-12 both ways) against
    unrolled Picard (200 iterations), and for each number n of forward iterations (Picard, exactly n) the
    bytes autograd keeps for backward and each gradient's error against that reference."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = EquilibriumBlock(state_dim, 4, width=50, init_scale=0.5).to(dtype)
        x = torch.randn(batch, 4, dtype=dtype)
    params = tuple(block.parameters())

    def grads(deq):
        block.zero_grad()
        (deq(x) ** 2).mean().backward()
        return torch.cat([p.grad.flatten() for p in params])

    ref = grads(DEQ(block, method="picard", backward="unrolled", tol=1e-300, max_iter=200, state=state_dim))
    imp_deq = DEQ(block, method="anderson", tol=1e-12, backward_tol=1e-12, max_iter=200, state=state_dim)
    agreement = float((grads(imp_deq) - ref).norm() / ref.norm())
    points = []
    for n in iterations:
        row = {}
        for mode in ("implicit", "unrolled"):
            # exactly n forward iterations, unconverged on purpose: the study measures how far the implicit
            # gradient is off when the forward solve stops early, so no warning for it
            deq = DEQ(
                block,
                method="picard",
                backward=mode,
                tol=1e-300,
                max_iter=n,
                state=state_dim,
                backward_tol=1e-12,
                backward_max_iter=200,
                warn=False,
            )
            row[f"{mode}_bytes"] = saved_tensor_bytes(lambda: deq(x), exclude=params)
            row[f"{mode}_grad_error"] = float((grads(deq) - ref).norm() / ref.norm())
        points.append(GradientMemoryPoint(n, **row))
    return GradientMemoryStudy(
        agreement, imp_deq.stats["forward_iters"], imp_deq.stats["backward_iters"], tuple(points)
    )


# --- Training: iteration growth, the regulariser, truncation ---------------------------------------


@dataclass(frozen=True)
class TrainRun:
    """One trained variant on one seed: its log, test MSE, and a fresh solve's iterations and residual
    on the test inputs with the trained block."""

    variant: str  # "DEQ", "DEQ + Jacobian reg. w", "truncated, k unrolled steps"
    seed: int
    jac_weight: float
    log: DEQLog
    test_mse: float
    test_forward_iters: int
    test_residual: float

    @property
    def final_iters(self) -> float:
        """Mean forward iterations over the last tenth of training (at least one epoch)."""
        k = max(1, len(self.log.forward_iters) // 10)
        return sum(self.log.forward_iters[-k:]) / k


def final_iters(run: TrainRun) -> float:
    """Mean forward iterations over the last tenth of training (at least one epoch)."""
    return run.final_iters


def train_variant(
    name: str, jac_weight: float, options: dict, seed: int, config: DEQTrainConfig, progress: bool = False
) -> TrainRun:
    """Train one variant on one seed of the synthetic regression of Bai et al. 2021."""
    x, y = bai_synthetic(config.n_train, seed=seed)
    xt, yt = bai_synthetic(config.n_test, seed=10_000 + seed)
    torch.manual_seed(seed)
    model = DEQModel(1, 1, state_dim=config.state_dim, width=config.width, **options)
    implicit = options.get("backward", "implicit") == "implicit"
    # rho(df/dz) at the fixed point on a grid of inputs, at a few epochs (exact eigenvalues, 64 x 16 x 16:
    # cheap); the truncated block has no fixed point to probe.
    probes = (
        dict(probe_x=torch.linspace(-2, 2, config.probe_points).unsqueeze(1), probe_epochs=probe_epochs(config))
        if implicit
        else {}
    )
    log = fit_deq(
        model,
        x,
        y,
        epochs=config.epochs,
        lr=config.lr,
        jac_weight=jac_weight,
        seed=seed,
        progress=progress,
        desc=f"{name}, seed {seed}",
        **probes,
    )
    model.eval()
    with torch.no_grad():
        mse = float(torch.mean((model(xt) - yt) ** 2))
        # how far from an equilibrium the trained block's output is: one solve at the course tolerance
        probe = DEQ(model.block, method=config.method, tol=config.tol, max_iter=config.max_iter, state=config.state_dim)
        probe(xt)
    return TrainRun(name, seed, jac_weight, log, mse, probe.stats["forward_iters"], probe.stats["forward_residual"])


@cached_study
def training_study(config: DEQTrainConfig, progress: bool = False) -> tuple[TrainRun, ...]:
    """Every variant of :func:`~.config.variants` on every seed of ``config``."""
    from tqdm.auto import tqdm

    jobs = [(v, s) for s in config.seeds for v in variants(config)]
    return tuple(
        train_variant(*v, s, config) for v, s in tqdm(jobs, desc="DEQ runs", disable=not progress, leave=False)
    )
