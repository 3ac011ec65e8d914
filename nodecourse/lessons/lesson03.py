"""Ledger rows of lesson 3 (what a flow cannot represent), and the studies behind them.

- ``annulus``: across seeds, a plain 2-D neural ODE with a linear readout has a
  misclassified arc on the circle |x| = 1.25 (even at high sample accuracy),
  while the augmented ODE and a ResNet of matched size have a positive margin
  on the whole circle; the plain ODE's forward NFE at the end of training is at
  least the augmented one's.
- ``augmentation-2p``: h(x) = -x on [-1, 1] fitted three ways: a 1-D flow
  (MSE stays at or above 1/3, the best order-preserving fit), a flow on R^2
  with a projection readout, and a 1-D flow plus one linear layer (both fit).

The lesson calls :func:`annulus_study` and :func:`negation_study` itself to draw
its figures; both are cached per configuration, so the ledger rows shown in
the lesson reuse the very runs the figures were drawn from.
"""
from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import torch

from nodecourse.augment import FitLog, augmented_node, fit, matched_resnet, plain_node, sign_accuracy
from nodecourse.claims import Measurement, Verdict, claim
from nodecourse.data import annulus, negation
from nodecourse.models import count_parameters
from nodecourse.probes import DEFAULT_PROBE_RADII, CircleProbe, probe_circles

ANNULUS_MODELS = ("NODE", "ANODE", "ResNet")


@dataclass(frozen=True)
class AnnulusConfig:
    """Sizes and solver settings of the annulus comparison (hashable, so runs can be cached)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    n_inner: int = 1000
    n_outer: int = 2000
    epochs: int = 12
    batch_size: int | None = 64
    lr: float = 1e-3
    method: str = "dopri5"
    tol: float = 1e-3
    hidden: tuple[int, ...] = (32, 32)
    activation: str = "relu"
    augment_dim: int = 1
    resnet_blocks: int = 2
    loss: str = "smooth_l1"
    probe_radii: tuple[float, ...] = DEFAULT_PROBE_RADII
    probe_points: int = 20_000
    dtype: str = "float32"


QUICK_ANNULUS = AnnulusConfig(n_inner=100, n_outer=200, epochs=60, batch_size=None, lr=1e-2)
"""Quick mode: 300 points, full batch, 60 Adam steps at lr 1e-2."""
FULL_ANNULUS = AnnulusConfig()
"""Full mode: 1000 + 2000 points, batch 64, 12 epochs, Adam lr 1e-3, with Dupont et al.'s solver
(dopri5, tol 1e-3), field (MLP 32-32) and loss (SmoothL1)."""


@dataclass
class AnnulusRun:
    """One trained model on one seed: its log, sample accuracy and circle probes (by radius)."""

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


def train_annulus_model(name: str, seed: int, config: AnnulusConfig, *, device=None,
                        progress: bool = False) -> AnnulusRun:
    """Train model ``name`` on the annulus drawn with ``seed`` (weights seeded too) and probe it."""
    dtype = getattr(torch, config.dtype)
    x, y = annulus(config.n_inner, config.n_outer, seed=seed, dtype=dtype, device=device)
    torch.manual_seed(seed)
    model = build_annulus_model(name, config)
    log = fit(model, x, y, epochs=config.epochs, lr=config.lr, batch_size=config.batch_size,
              loss=config.loss, seed=seed, progress=progress, desc=f"{name} seed {seed}")
    probes = probe_circles(model, config.probe_radii, n_points=config.probe_points)
    return AnnulusRun(name, seed, model, log, count_parameters(model), sign_accuracy(model, x, y),
                      {p.radius: p for p in probes})


_ANNULUS_CACHE: dict[AnnulusConfig, tuple[AnnulusRun, ...]] = {}


def annulus_study(config: AnnulusConfig, progress: bool = False) -> tuple[AnnulusRun, ...]:
    """Train NODE, ANODE and ResNet on every seed of ``config``; cached per configuration
    (``progress`` only shows a bar, it is not part of the cache key)."""
    if config not in _ANNULUS_CACHE:
        from tqdm.auto import tqdm

        jobs = [(name, seed) for seed in config.seeds for name in ANNULUS_MODELS]
        _ANNULUS_CACHE[config] = tuple(
            train_annulus_model(name, seed, config)
            for name, seed in tqdm(jobs, desc="annulus runs", disable=not progress, leave=False)
        )
    return _ANNULUS_CACHE[config]


def annulus_findings(runs, radius: float = 1.25) -> dict:
    """The three statements of the ``annulus`` row, each evaluated per seed.

    Returns ``{"node_has_wrong_arc", "others_positive_margin", "node_nfe_at_least_anode"}``
    (each a dict seed -> bool) and ``"holds"`` (all true on every seed).
    """
    by = {(r.model_name, r.seed): r for r in runs}
    seeds = sorted({r.seed for r in runs})
    arc = {s: by["NODE", s].probes[radius].min_margin < 0 for s in seeds}
    others = {s: all(by[m, s].probes[radius].min_margin > 0 for m in ("ANODE", "ResNet")) for s in seeds}
    nfe = {s: by["NODE", s].final_nfe() >= by["ANODE", s].final_nfe() for s in seeds}
    holds = all(arc.values()) and all(others.values()) and all(nfe.values())
    return {"node_has_wrong_arc": arc, "others_positive_margin": others, "node_nfe_at_least_anode": nfe,
            "holds": holds}


@claim(
    id="annulus",
    claim="A plain 2-D neural ODE cannot separate disk from ring: a wrong arc on |x|=1.25 even at high "
          "sample accuracy; augmented ODE and ResNet have a positive margin there; NODE needs >= the NFE of ANODE",
    source="Dupont et al. 2019 (Augmented Neural ODEs), sec. 3-4",
    published="NODE flows complex, higher NFE; ANODE simpler and faster (dopri5, tol 1e-3, MLP 32-32, SmoothL1)",
    lesson="03",
)
def measure_annulus(quick: bool) -> Measurement:
    config = QUICK_ANNULUS if quick else FULL_ANNULUS
    runs = annulus_study(config)
    f = annulus_findings(runs)
    by = {(r.model_name, r.seed): r for r in runs}
    seeds = config.seeds
    node_acc = min(by["NODE", s].sample_accuracy for s in seeds)
    node_arc = [by["NODE", s].probes[1.25].misclassified for s in seeds]
    margins = {m: min(by[m, s].probes[1.25].min_margin for s in seeds) for m in ANNULUS_MODELS}
    nfe = {m: sum(by[m, s].final_nfe() for s in seeds) / len(seeds) for m in ("NODE", "ANODE")}
    measured = (
        f"{len(seeds)} seeds: NODE sample acc >= {node_acc:.1%}, wrong arc on |x|=1.25 "
        f"{min(node_arc):.2%}-{max(node_arc):.2%} (min margin {margins['NODE']:.2f}); "
        f"min margin ANODE {margins['ANODE']:.2f}, ResNet {margins['ResNet']:.2f}; "
        f"final forward NFE per epoch NODE {nfe['NODE']:.0f} vs ANODE {nfe['ANODE']:.0f}"
    )
    return Measurement(measured, Verdict.HOLDS if f["holds"] else Verdict.DOES_NOT_HOLD,
                       {"config": asdict(config), **{k: v for k, v in f.items()}})


# --- h(x) = -x three ways ------------------------------------------------------------------------

NEGATION_MODELS = ("1-D flow", "R^2 flow + projection", "1-D flow + linear")


@dataclass(frozen=True)
class NegationConfig:
    """Sizes of the h(x) = -x fits (hashable, so runs can be cached)."""

    n_points: int = 64
    epochs: int = 400
    lr: float = 1e-2
    hidden: tuple[int, ...] = (32, 32)
    activation: str = "relu"
    method: str = "dopri5"
    tol: float = 1e-3
    step_size: float | None = None
    seed: int = 0
    dtype: str = "float32"


QUICK_NEGATION = NegationConfig(n_points=16, epochs=80, method="rk4", step_size=0.25)
"""Quick mode: 16 grid points, 80 full-batch Adam steps, RK4 with 4 fixed steps (dopri5 is slower here)."""
FULL_NEGATION = NegationConfig()
ORDER_PRESERVING_FLOOR = 1.0 / 3.0
"""The MSE of the best non-decreasing fit to h(x) = -x on [-1, 1] (the constant 0): the mean of x^2."""


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


@functools.lru_cache(maxsize=4)
def negation_study(config: NegationConfig) -> dict[str, tuple[torch.nn.Module, FitLog, float]]:
    """Fit h(x) = -x with each model of :data:`NEGATION_MODELS`: name -> (model, log, final MSE)."""
    dtype = getattr(torch, config.dtype)
    x, y = negation(config.n_points, dtype=dtype)
    out = {}
    for name in NEGATION_MODELS:
        torch.manual_seed(config.seed)
        model = build_negation_model(name, config)
        log = fit(model, x, y, epochs=config.epochs, lr=config.lr, loss="mse", classification=False,
                  seed=config.seed)
        with torch.no_grad():
            mse = torch.nn.functional.mse_loss(model(x), y).item()
        out[name] = (model, log, mse)
    return out


def negation_findings(results: dict, floor_slack: float = 0.02, fit_threshold: float = 0.01) -> dict:
    mse = {name: results[name][2] for name in NEGATION_MODELS}
    stuck = mse["1-D flow"] >= ORDER_PRESERVING_FLOOR - floor_slack
    fits = all(mse[n] < fit_threshold for n in NEGATION_MODELS[1:])
    return {"mse": mse, "flow_1d_at_floor": stuck, "repairs_fit": fits, "holds": stuck and fits}


@claim(
    id="augmentation-2p",
    claim="h(x)=-x on [-1,1]: a 1-D flow stays at MSE >= 1/3; a flow on R^2 with a projection readout, "
          "and a 1-D flow plus one linear layer, both fit (MSE < 0.01)",
    source="Zhang et al. 2020 (Approximation capabilities of neural ODEs); Dupont et al. 2019",
    published="homeomorphisms of R^p are flows on R^2p; flow + linear layer approximates non-invertible maps",
    lesson="03",
)
def measure_negation(quick: bool) -> Measurement:
    config = QUICK_NEGATION if quick else FULL_NEGATION
    f = negation_findings(negation_study(config))
    mse = f["mse"]
    measured = "MSE: " + ", ".join(f"{n} {mse[n]:.3g}" for n in NEGATION_MODELS)
    return Measurement(measured, Verdict.HOLDS if f["holds"] else Verdict.DOES_NOT_HOLD,
                       {"config": asdict(config), **f})
