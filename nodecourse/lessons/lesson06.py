"""Lesson 6 (deep equilibrium models): the studies behind its figures, and its ledger rows.

- ``anderson-vs-picard``: on contractions with spectral radius 0.9 to 0.99, Anderson reaches
  1e-8 relative residual in at most half of Picard's iterations (and, when torchdeq is
  installed, in no more than torchdeq's Anderson).
- ``deq-iteration-growth``: the forward iterations of a DEQ grow during training.
- ``jacobian-regularization``: the Jacobian regulariser cuts them, for a (slightly) different fit.
- ``hutchinson-unbiased``: the Hutchinson estimate of ||df/dz||_F^2 averages to the exact value.

The lesson calls the same cached studies to draw its figures, so the rows it shows come
from the very runs it plots.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import torch

from nodecourse.claims import Measurement, Verdict, claim
from nodecourse.deq import DEQ, exact_jacobian_frobenius, jacobian_regularizer, saved_tensor_bytes
from nodecourse.deq.compare import SolverRun, compare_solvers
from nodecourse.deq.models import DEQModel, EquilibriumBlock
from nodecourse.deq.problems import bai_synthetic, contraction
from nodecourse.deq.training import DEQLog, fit_deq

# --- Anderson vs Picard ----------------------------------------------------------------------------

SOLVER_RHOS = (0.9, 0.95, 0.99)
SOLVER_KINDS = ("linear", "tanh")


@functools.lru_cache(maxsize=8)
def solver_study(*, rhos=SOLVER_RHOS, kinds=SOLVER_KINDS, tol: float = 1e-8, dim: int = 50,
                 torchdeq: bool = True, torchdeq_budget: float | None = 3.0) -> dict[tuple[str, float], list[SolverRun]]:
    """Evaluations of f to ``tol`` relative residual for every solver on every contraction (float64);
    cached per arguments, so the lesson's table and its ledger row share one run.

    torchdeq's solvers (when installed) get up to ``torchdeq_budget`` times our evaluations.
    """
    return {(k, r): compare_solvers(contraction(k, r, dim=dim), tol=tol, torchdeq=torchdeq,
                                    torchdeq_budget=torchdeq_budget)
            for k in kinds for r in rhos}


def anderson_findings(study) -> dict:
    """Per problem: Anderson/Picard ratio, and Anderson vs torchdeq's Anderson (None without torchdeq)."""
    out = {}
    for key, runs in study.items():
        by = {r.label: r for r in runs}
        ours, picard = by["nodecourse:anderson"], by["nodecourse:picard"]
        ref = by.get("torchdeq:anderson")
        out[f"{key[0]} rho={key[1]}"] = {
            "anderson": ours.n_evals, "picard": picard.n_evals, "reached": ours.reached and picard.reached,
            "half_of_picard": ours.reached and ours.n_evals <= 0.5 * picard.n_evals,
            "torchdeq_anderson": None if ref is None else ref.n_evals,
            "torchdeq_not_reached": False if ref is None else not ref.reached,
            "not_worse_than_torchdeq": None if ref is None else (ours.reached and (not ref.reached
                                                                                  or ours.n_evals <= ref.n_evals)),
        }
    return out


@claim(
    id="anderson-vs-picard",
    claim="Anderson acceleration reaches 1e-8 relative residual in at most half of Picard's iterations "
          "on contractions with spectral radius 0.9-0.99 (and in no more than torchdeq's Anderson)",
    source="Walker & Ni 2011 (Anderson acceleration); Bai et al. 2019 (DEQ), sec. 3.1",
    published="Anderson/Broyden converge in far fewer iterations than naive fixed-point iteration",
    lesson="06",
)
def measure_anderson(quick: bool) -> Measurement:
    study = solver_study(dim=30 if quick else 50)
    f = anderson_findings(study)
    holds = all(v["half_of_picard"] for v in f.values())
    ref = [v["not_worse_than_torchdeq"] for v in f.values()]
    if all(r is not None for r in ref):
        holds = holds and all(ref)
        n_slower = sum(v["torchdeq_not_reached"] for v in f.values())
        ref_text = (f"; torchdeq's Anderson (defaults m=6, lam=1e-4) needed more on all {len(f)}"
                    if all(ref) else "; torchdeq's Anderson needed fewer on some") + \
                   (f" ({n_slower} not at 1e-8 within 3x our count)" if n_slower else "")
    else:
        ref_text = "; torchdeq not installed, its Anderson not compared"
    ratios = [v["anderson"] / v["picard"] for v in f.values()]
    measured = (f"{len(f)} contractions (rho 0.9-0.99): Anderson {min(v['anderson'] for v in f.values())}-"
                f"{max(v['anderson'] for v in f.values())} evaluations vs Picard "
                f"{min(v['picard'] for v in f.values())}-{max(v['picard'] for v in f.values())} "
                f"(ratio {min(ratios):.2f}-{max(ratios):.2f}){ref_text}")
    return Measurement(measured, Verdict.HOLDS if holds else Verdict.DOES_NOT_HOLD, {"problems": f})


# --- Hutchinson -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8)
def hutchinson_study(*, n_probes: int = 20_000, dims=(4, 8, 16), seed: int = 0,
                     dtype: torch.dtype = torch.float64) -> list[dict]:
    """For an equilibrium block per ``dim`` at a random point: the exact ||df/dz||_F^2 and
    ``n_probes`` single-probe Hutchinson estimates (one batched VJP: the point is replicated).

    Each dict: ``dim``, ``exact``, ``mean``, ``std`` (of one probe), ``rel_error`` of the mean,
    and ``running_mean`` (a list: mean of the first m probes, m = 1..n_probes, every 10th kept).
    Cached per arguments.
    """
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
        est = jacobian_regularizer(f_out, zr, 1, reduction="none", generator=gen).detach()
        running = torch.cumsum(est, 0) / torch.arange(1, n_probes + 1, dtype=dtype)
        mean = float(est.mean())
        out.append({"dim": dim, "exact": exact, "mean": mean, "std": float(est.std()),
                    "rel_error": abs(mean - exact) / exact, "running_mean": running[::10].tolist()})
    return out


@claim(
    id="hutchinson-unbiased",
    claim="The Hutchinson estimate of ||df/dz||_F^2 is unbiased: its mean over many probes is within 2% "
          "of the exact value",
    source="Hutchinson 1989; Bai et al. 2021 (Jacobian regularisation of DEQs), sec. 3",
    published="unbiased; variance falls as 1/M probes",
    lesson="06",
)
def measure_hutchinson(quick: bool) -> Measurement:
    rows = hutchinson_study(n_probes=20_000 if quick else 100_000)
    holds = all(r["rel_error"] <= 0.02 for r in rows)
    measured = "; ".join(f"dim {r['dim']}: exact {r['exact']:.3f}, mean {r['mean']:.3f} "
                         f"({r['rel_error']:.2%} off)" for r in rows)
    return Measurement(measured, Verdict.HOLDS if holds else Verdict.DOES_NOT_HOLD,
                       {"rows": [{k: v for k, v in r.items() if k != "running_mean"} for r in rows]})


# --- Implicit vs unrolled gradients and their memory -----------------------------------------------


def gradient_memory_study(*, iterations=(5, 10, 20, 40, 80), state_dim: int = 16, batch: int = 32,
                          seed: int = 0, dtype: torch.dtype = torch.float64) -> dict:
    """On one contractive equilibrium block (float64):

    - ``agreement``: relative difference of the parameter gradients, implicit (tol 1e-12 both ways)
      vs unrolled Picard with many iterations (200);
    - ``memory``: for each number of forward iterations n (Picard, exactly n): bytes autograd keeps
      for backward, implicit vs unrolled, and the implicit gradient's relative error against the
      200-step unrolled reference (it falls as the forward solve converges).
    """
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = EquilibriumBlock(state_dim, 4, width=50, init_scale=0.5).to(dtype)
        x = torch.randn(batch, 4, dtype=dtype)
    params = tuple(block.parameters())

    def grads(deq):
        block.zero_grad()
        (deq(x) ** 2).mean().backward()
        return torch.cat([p.grad.flatten() for p in params])

    ref_deq = DEQ(block, solver="picard", backward="unrolled", tol=1e-300, max_iter=200, state=state_dim)
    ref = grads(ref_deq)
    imp_deq = DEQ(block, solver="anderson", tol=1e-12, backward_tol=1e-12, max_iter=200, state=state_dim)
    implicit = grads(imp_deq)
    agreement = float((implicit - ref).norm() / ref.norm())
    rows = []
    for n in iterations:
        row = {"iterations": n}
        for mode in ("implicit", "unrolled"):
            deq = DEQ(block, solver="picard", backward=mode, tol=1e-300, max_iter=n, state=state_dim,
                      backward_tol=1e-12, backward_max_iter=200)
            row[f"{mode}_bytes"] = saved_tensor_bytes(lambda: deq(x), exclude=params)
            g = grads(deq)
            row[f"{mode}_grad_error"] = float((g - ref).norm() / ref.norm())
        rows.append(row)
    return {"agreement": agreement, "forward_iters": imp_deq.stats["forward_iters"],
            "backward_iters": imp_deq.stats["backward_iters"], "memory": rows}


# --- Training: iteration growth, the regulariser, truncation ---------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """Sizes of the DEQ training study (hashable, so runs can be cached)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    n_train: int = 512
    n_test: int = 512
    epochs: int = 200
    lr: float = 1e-2
    state_dim: int = 16
    width: int = 50
    solver: str = "anderson"
    tol: float = 1e-3
    max_iter: int = 40
    jac_weights: tuple[float, ...] = (0.1, 1.0, 3.0)
    truncated_steps: int = 5


QUICK_TRAIN = TrainConfig(seeds=(0, 1), n_train=128, n_test=256, epochs=80, jac_weights=(1.0,))
"""Quick mode: 128 points, full batch, 80 Adam steps, 2 seeds, one regulariser weight."""
FULL_TRAIN = TrainConfig()


@dataclass
class TrainRun:
    """One trained variant on one seed: its log, test MSE, and test-time forward iterations."""

    variant: str  # "DEQ", "DEQ + Jacobian reg. w", "truncated k steps"
    seed: int
    jac_weight: float
    log: DEQLog
    test_mse: float
    test_forward_iters: int
    test_residual: float


def variants(config: TrainConfig) -> list[tuple[str, float, dict]]:
    """(name, jacobian weight, DEQModel options) of each variant in the study."""
    base = dict(solver=config.solver, tol=config.tol, max_iter=config.max_iter)
    out = [("DEQ", 0.0, base)]
    out += [(f"DEQ + Jacobian reg. {w:g}", w, base) for w in config.jac_weights]
    out.append((f"truncated, {config.truncated_steps} unrolled steps", 0.0,
                dict(solver="picard", backward="unrolled", tol=1e-300, max_iter=config.truncated_steps)))
    return out


def train_variant(name: str, jac_weight: float, options: dict, seed: int, config: TrainConfig,
                  progress: bool = False) -> TrainRun:
    x, y = bai_synthetic(config.n_train, seed=seed)
    xt, yt = bai_synthetic(config.n_test, seed=10_000 + seed)
    torch.manual_seed(seed)
    model = DEQModel(1, 1, state_dim=config.state_dim, width=config.width, **options)
    log = fit_deq(model, x, y, epochs=config.epochs, lr=config.lr, jac_weight=jac_weight, seed=seed,
                  progress=progress, desc=f"{name}, seed {seed}")
    model.eval()
    with torch.no_grad():
        mse = float(torch.mean((model(xt) - yt) ** 2))
        # how far from an equilibrium the trained block's output is: one solve at the course tolerance
        probe = DEQ(model.block, solver=config.solver, tol=config.tol, max_iter=config.max_iter,
                    state=config.state_dim)
        probe(xt)
    return TrainRun(name, seed, jac_weight, log, mse, probe.stats["forward_iters"], probe.stats["forward_residual"])


_TRAIN_CACHE: dict[TrainConfig, tuple[TrainRun, ...]] = {}


def training_study(config: TrainConfig, progress: bool = False) -> tuple[TrainRun, ...]:
    """Every variant on every seed of ``config``; cached per configuration."""
    if config not in _TRAIN_CACHE:
        from tqdm.auto import tqdm

        jobs = [(v, s) for s in config.seeds for v in variants(config)]
        _TRAIN_CACHE[config] = tuple(
            train_variant(*v, s, config) for v, s in tqdm(jobs, desc="DEQ runs", disable=not progress, leave=False)
        )
    return _TRAIN_CACHE[config]


def final_iters(run: TrainRun) -> float:
    """Mean forward iterations over the last tenth of training (at least one epoch)."""
    k = max(1, len(run.log.forward_iters) // 10)
    return sum(run.log.forward_iters[-k:]) / k


@claim(
    id="deq-iteration-growth",
    claim="The forward solver iterations of a DEQ grow during training",
    source="Bai et al. 2021 (Stabilizing Equilibrium Models by Jacobian Regularization), fig. 1",
    published="more than 3x by the end of training",
    lesson="06",
)
def measure_growth(quick: bool) -> Measurement:
    config = QUICK_TRAIN if quick else FULL_TRAIN
    runs = [r for r in training_study(config) if r.variant == "DEQ"]
    growth = {r.seed: r.log.growth() for r in runs}
    grows = all(g > 1.5 for g in growth.values())
    over3 = sum(g > 3 for g in growth.values())
    measured = (f"{len(runs)} seeds, {config.epochs} epochs: forward iterations grew "
                f"{min(growth.values()):.1f}x-{max(growth.values()):.1f}x (last tenth of training over the first 2 %); "
                f"more than 3x on {over3} of {len(runs)} seeds")
    return Measurement(measured, Verdict.HOLDS if grows else Verdict.DOES_NOT_HOLD,
                       {"growth": growth, "config": asdict(config)})


@claim(
    id="jacobian-regularization",
    claim="The Jacobian regulariser cuts a DEQ's forward iterations, for a slightly different (worse) fit",
    source="Bai et al. 2021 (Stabilizing Equilibrium Models by Jacobian Regularization), table 1",
    published="WikiText-103: 30 NFE, ppl 24.0 without; 12 NFE, ppl 24.9 with",
    lesson="06",
)
def measure_regularization(quick: bool) -> Measurement:
    config = QUICK_TRAIN if quick else FULL_TRAIN
    runs = training_study(config)
    w = max(config.jac_weights)
    by = {(r.variant, r.seed): r for r in runs}
    reg = f"DEQ + Jacobian reg. {w:g}"
    fewer = {s: final_iters(by[reg, s]) < final_iters(by["DEQ", s]) for s in config.seeds}
    mean = lambda vals: sum(vals) / len(vals)  # noqa: E731
    it_plain = mean([final_iters(by["DEQ", s]) for s in config.seeds])
    it_reg = mean([final_iters(by[reg, s]) for s in config.seeds])
    mse_plain = mean([by["DEQ", s].test_mse for s in config.seeds])
    mse_reg = mean([by[reg, s].test_mse for s in config.seeds])
    measured = (f"{len(config.seeds)} seeds, weight {w:g}: forward iterations {it_plain:.1f} -> {it_reg:.1f}; "
                f"test MSE {mse_plain:.3f} -> {mse_reg:.3f}")
    return Measurement(measured, Verdict.HOLDS if all(fewer.values()) else Verdict.DOES_NOT_HOLD,
                       {"fewer_iterations_per_seed": fewer, "iters": (it_plain, it_reg),
                        "test_mse": (mse_plain, mse_reg)})
