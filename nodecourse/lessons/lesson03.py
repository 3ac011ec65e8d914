"""Ledger rows of lesson 3 (what a flow cannot represent), and the studies behind them.

- ``annulus`` (Dupont et al. 2019): across seeds, a plain 2-D neural ODE with a
  linear readout leaves a misclassified arc on the circle |x| = 1.25 (beside its
  sample accuracy), the augmented ODE and a ResNet of matched size have a
  positive margin on the whole circle, and the plain ODE's forward NFE is at
  least the augmented one's. Three parts, each judged by a 95 % interval over seeds.
- ``augmentation-2p`` (Zhang et al. 2020, first half): h(x) = -x on [-1, 1]. A
  1-D flow cannot go below the best order-preserving fit (MSE (n+1)/(3(n-1)) on
  the grid, a computed bound); a flow on R^2 with a projection readout fits.
- ``flow-readout-noninvertible`` (Zhang et al. 2020, second half): h(x) = |x|.
  A flow on R^2 plus a linear readout approximates it; a 1-D flow plus a linear
  readout is monotone and cannot beat the best monotone fit (a computed bound);
  but the same 1-D model trained with fixed RK4 steps can, because a solver's
  one-step map is invertible only while h * Lip(f) is small.

Every flow is judged as a flow: the trained field is solved again with dopri5 at
a tight tolerance (in float64), and the as-trained number is shown beside it.

The lesson calls the studies itself to draw its figures; they are cached per
configuration, so the ledger rows shown in the lesson reuse the very runs the
figures were drawn from.
"""
from __future__ import annotations

import copy
from dataclasses import asdict, dataclass

import numpy as np
import torch

from nodecourse.claims import ClaimVerdict, Measurement, Threshold, claim, combine, judge, parts_text, seed_interval
from nodecourse.data import annulus, negation
from nodecourse.measure.probes import DEFAULT_PROBE_RADII, CircleProbe, probe_circles
from nodecourse.models import count_parameters
from nodecourse.models.augment import FitLog, augmented_node, fit, matched_resnet, plain_node, sign_accuracy

# --- shared judging helpers -----------------------------------------------------------------------


def best_monotone_mse(y, increasing: bool | None = True) -> float:
    """The smallest mean squared error of a monotone fit to targets ``y`` (ordered by their inputs).

    ``increasing=True``: non-decreasing fits (a flow's map on R); ``False``: non-increasing;
    ``None``: the better of the two (a flow followed by a linear readout of either sign).
    Pool-adjacent-violators (isotonic regression), exact on the grid. ``y``: shape ``(n,)`` or ``(n, 1)``.
    """
    y = np.asarray(y, dtype=float).reshape(-1)
    if increasing is None:
        return min(best_monotone_mse(y, True), best_monotone_mse(y, False))
    values = y if increasing else -y
    blocks: list[list[float]] = []  # [sum, count] of pooled runs
    for v in values:
        blocks.append([v, 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, c = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += c
    fitted = np.concatenate([np.full(int(c), s / c) for s, c in blocks])
    return float(np.mean((fitted - values) ** 2))


def judge_bound(values, bound: float, slack: float, *, error: float = 0.0,
                min_seeds: int = 3) -> tuple[ClaimVerdict, str]:
    """Judge "every seed's value >= ``bound``" for a bound that holds for EVERY map of a class.

    A seed-interval (:func:`judge`) suits a claim about a typical value; a proven lower bound must
    hold on each seed, so the smallest value is compared, allowing ``slack`` for the re-solve's
    numerical error. HOLDS: min >= bound - slack; DOES_NOT_HOLD: some seed below that (the measured
    map is then not in the class: the solve was not accurate); NOT_MEASURABLE with too few seeds,
    or when the measured ``error`` of the values is larger than ``slack`` (the slack would not cover it).
    """
    vals = [float(v) for v in values]
    if len(vals) < min_seeds:
        return ClaimVerdict.NOT_MEASURABLE, f"{len(vals)} seed(s): too few (need {min_seeds})"
    if error > slack:
        return ClaimVerdict.NOT_MEASURABLE, f"the values' own error {error:.2g} exceeds the slack {slack:g}"
    low = min(vals)
    if low >= bound - slack:
        return ClaimVerdict.HOLDS, f"every seed >= {bound:.4g} (lowest {low:.4g}, slack {slack:g})"
    return ClaimVerdict.DOES_NOT_HOLD, f"a seed reaches {low:.4g} < {bound:.4g} - {slack:g}"


def _interval_text(iv, fmt: str = ".3g") -> str:
    return "n/a" if iv is None else f"{iv.mean:{fmt}} [{iv.lo:{fmt}}, {iv.hi:{fmt}}]"


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


# --- the annulus ----------------------------------------------------------------------------------

ANNULUS_MODELS = ("NODE", "ANODE", "ResNet")
PROBE_RADIUS = 1.25


@dataclass(frozen=True)
class AnnulusConfig:
    """Sizes and solver settings of the annulus comparison (hashable, so runs can be cached)."""

    seeds: tuple[int, ...] = tuple(range(10))
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


QUICK_ANNULUS = AnnulusConfig(seeds=tuple(range(8)), n_inner=100, n_outer=200, epochs=60, batch_size=None, lr=1e-2)
"""Quick mode: 300 points, full batch, 60 Adam steps at lr 1e-2, eight seeds (the NFE ratio moves in
whole solver steps, so it needs more seeds than the margins to be decided)."""
FULL_ANNULUS = AnnulusConfig()
"""Full mode: 1000 + 2000 points, batch 64, 12 epochs, Adam lr 1e-3, ten seeds, with Dupont et al.'s
solver (dopri5, tol 1e-3), field (MLP 32-32) and loss (SmoothL1)."""

ANNULUS_MARGIN = 0.0
"""The margin (label x output) that separates right from wrong: the theorem's own line."""
ANNULUS_NFE_RATIO = 1.0
"""NODE / ANODE forward NFE: "higher NFE" means a ratio of at least 1."""
ANNULUS_THRESHOLD = Threshold(
    f"on |x|={PROBE_RADIUS}: NODE's smallest margin < {ANNULUS_MARGIN:g} (a wrong arc); ANODE's and "
    f"ResNet's > {ANNULUS_MARGIN:g}; forward NFE NODE / ANODE >= {ANNULUS_NFE_RATIO:g} at the end of training "
    "(last 10 % of epochs; whole-training mean as a second reading); each part by its 95 % interval over seeds",
    kind="published",
    why="the thresholds are the published statements: Dupont et al. 2019 prove a plain NODE cannot represent "
        "the disk/ring map (so its boundary must cut every circle in the ring: margin < 0 somewhere), fit it "
        "with ANODE, and report higher NFE for NODE than ANODE (ratio 1). The course's: the circle |x|=1.25 "
        "probed at 20,000 angles, the matched-size ResNet (their argument does not bind discrete steps), "
        "NFE over the last 10 % of epochs, and the seed intervals",
)


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


def annulus_values(runs, radius: float = PROBE_RADIUS) -> dict[str, dict[int, float]]:
    """The per-seed numbers the ``annulus`` row is judged on: ``name -> {seed: value}``.

    ``NODE margin``, ``ANODE margin``, ``ResNet margin``: smallest label x output on |x| = ``radius``;
    ``NFE ratio (end)``: NODE / ANODE forward NFE per epoch over the last 10 % of epochs;
    ``NFE ratio (whole)``: the same over all of training; ``NODE sample accuracy``.
    """
    by = {(r.model_name, r.seed): r for r in runs}
    seeds = sorted({r.seed for r in runs})
    out = {f"{m} margin": {s: by[m, s].probes[radius].min_margin for s in seeds} for m in ANNULUS_MODELS}
    out["NFE ratio (end)"] = {s: by["NODE", s].final_nfe() / by["ANODE", s].final_nfe() for s in seeds}
    out["NFE ratio (whole)"] = {s: by["NODE", s].mean_nfe() / by["ANODE", s].mean_nfe() for s in seeds}
    out["NODE sample accuracy"] = {s: by["NODE", s].sample_accuracy for s in seeds}
    out["NODE wrong fraction"] = {s: by["NODE", s].probes[radius].misclassified for s in seeds}
    return out


def annulus_parts(values: dict[str, dict[int, float]]) -> dict:
    """Judge the ``annulus`` row's three parts from :func:`annulus_values` (fake values work too).

    Returns ``{"parts": {part: ClaimVerdict}, "subparts": {...}, "intervals": {name: ConfidenceInterval|None},
    "reasons": {...}, "verdict": ClaimVerdict}``. Margins are judged against :data:`ANNULUS_MARGIN`,
    the NFE ratio against :data:`ANNULUS_NFE_RATIO` in two readings (end of training, whole
    training); readings that disagree make that part "holds in part".
    """
    sub, iv, why = {}, {}, {}
    tests = {"NODE margin": (ANNULUS_MARGIN, False), "ANODE margin": (ANNULUS_MARGIN, True),
             "ResNet margin": (ANNULUS_MARGIN, True), "NFE ratio (end)": (ANNULUS_NFE_RATIO, True),
             "NFE ratio (whole)": (ANNULUS_NFE_RATIO, True)}
    for name, (threshold, above) in tests.items():
        sub[name], iv[name], why[name] = judge(list(values[name].values()), threshold, above=above)
    parts = {
        "NODE wrong arc": sub["NODE margin"],
        "ANODE and ResNet positive margin": combine({k: sub[k] for k in ("ANODE margin", "ResNet margin")}),
        "NFE NODE >= ANODE": combine({k: sub[k] for k in ("NFE ratio (end)", "NFE ratio (whole)")}),
    }
    return {"parts": parts, "subparts": sub, "intervals": iv, "reasons": why, "verdict": combine(parts)}


def annulus_findings(runs, radius: float = PROBE_RADIUS) -> dict:
    """Per-seed booleans of the three statements (for tables), and the judged parts.

    ``node_has_wrong_arc``, ``others_positive_margin``, ``node_nfe_at_least_anode``: dict seed -> bool;
    ``judged``: :func:`annulus_parts`; ``holds``: the judged verdict is HOLDS.
    """
    values = annulus_values(runs, radius)
    seeds = sorted(values["NODE margin"])
    judged = annulus_parts(values)
    return {
        "node_has_wrong_arc": {s: values["NODE margin"][s] < ANNULUS_MARGIN for s in seeds},
        "others_positive_margin": {s: min(values["ANODE margin"][s], values["ResNet margin"][s]) > ANNULUS_MARGIN
                                   for s in seeds},
        "node_nfe_at_least_anode": {s: values["NFE ratio (end)"][s] >= ANNULUS_NFE_RATIO for s in seeds},
        "values": values,
        "judged": judged,
        "holds": judged["verdict"] is ClaimVerdict.HOLDS,
    }


@claim(
    id="annulus",
    claim="A plain 2-D neural ODE cannot separate disk from ring: its boundary leaves a wrong arc on |x|=1.25 "
          "(whatever its sample accuracy); augmented ODE and ResNet have a positive margin there; NODE needs "
          ">= the NFE of ANODE",
    source="Dupont et al. 2019 (Augmented Neural ODEs), sec. 3-4",
    published="NODE cannot represent g (proof); ANODE fits it; NODE flows complex, higher NFE; ANODE simpler and "
              "faster (dopri5, tol 1e-3, MLP 32-32, SmoothL1)",
    lesson="03",
    threshold=ANNULUS_THRESHOLD,
)
def measure_annulus(quick: bool) -> Measurement:
    config = QUICK_ANNULUS if quick else FULL_ANNULUS
    f = annulus_findings(annulus_study(config))
    v, j = f["values"], f["judged"]
    iv = j["intervals"]
    n = len(config.seeds)
    acc, wrong = list(v["NODE sample accuracy"].values()), list(v["NODE wrong fraction"].values())
    measured = (
        f"{n} seeds, 95 % intervals: NODE min margin {_interval_text(iv['NODE margin'], '+.2f')} (wrong arc on "
        f"{sum(f['node_has_wrong_arc'].values())}/{n} seeds, {min(wrong):.2%}-{max(wrong):.2%} of the circle, "
        f"sample acc {min(acc):.1%}-{max(acc):.1%}); ANODE {_interval_text(iv['ANODE margin'], '+.2f')}, "
        f"ResNet {_interval_text(iv['ResNet margin'], '+.2f')}; NFE NODE/ANODE at the end "
        f"{_interval_text(iv['NFE ratio (end)'], '.2f')}, "
        f"whole training {_interval_text(iv['NFE ratio (whole)'], '.2f')}. " + parts_text(j["parts"])
    )
    details = {
        "config": asdict(config),
        "per_seed": {k: {str(s): x for s, x in d.items()} for k, d in v.items()},
        "intervals": {k: None if i is None else asdict(i) for k, i in iv.items()},
        "subparts": {k: s.value for k, s in j["subparts"].items()},
        "reasons": j["reasons"],
        "parts": {k: s.value for k, s in j["parts"].items()},
    }
    return Measurement(measured, j["verdict"], details)


# --- re-solving a trained flow, and the bounds a flow cannot beat ----------------------------------

RESOLVE_TOL = 1e-6
"""dopri5 tolerance (rtol = atol) of the accurate re-solve of a trained flow, in float64."""
RESOLVE_CHECK_TOL = 1e-8
"""A second, tighter re-solve: the change between the two estimates the re-solve's own error."""
RESOLVE_SLACK = 1e-4
"""How far below a proven bound a re-solved MSE may fall before it counts against the bound: far above
the re-solve's error (dopri5 at 1e-6 moves outputs by about 1e-6, an MSE by about 1e-6)."""


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


def rk4_invertible_hlip() -> float:
    """The h * Lip(f) below which an RK4 step z -> z + h * sum(b_i k_i) is sure to be invertible.

    The step's derivative differs from the identity by at most x + x^2/2 + x^3/6 + x^4/24 with
    x = h * Lip(f) (chain the four stages); below 1 the step is a contraction-perturbed identity,
    hence invertible. Returns the root of that polynomial = 1 (about 0.70). Euler's is 1.
    """
    roots = np.roots([1 / 24, 1 / 6, 1 / 2, 1, -1])
    return float(min(r.real for r in roots if abs(r.imag) < 1e-12 and r.real > 0))


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


def fit_flow(name: str, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, *, seed: int, epochs: int,
             lr: float, step_size: float | None) -> FlowFit:
    """Train ``model`` on ``(x, y)`` (MSE, Adam, full batch), then judge it as a flow (see :class:`FlowFit`)."""
    log = fit(model, x, y, epochs=epochs, lr=lr, loss="mse", classification=False, seed=seed)
    with torch.no_grad():
        mse = _mse(model(x), y)
    out, stats = resolve_accurately(model, x, RESOLVE_TOL)
    tight, _ = resolve_accurately(model, x, RESOLVE_CHECK_TOL)
    mse_resolved = _mse(out, y)
    slope = hlip = None
    if model.flow.augment_dim == 0 and x.shape[1] == 1 and step_size is not None:
        slope, hlip = one_step_diagnostics(model, step_size)
    return FlowFit(name, seed, model, log, mse, mse_resolved, abs(mse_resolved - _mse(tight, y)),
                   int(stats.get("nfe", 0)), str(stats.get("status")), slope, hlip)


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
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    dtype: str = "float32"


QUICK_NEGATION = NegationConfig(n_points=16, epochs=80, method="rk4", step_size=0.25, seeds=(0, 1, 2))
"""Quick mode: 16 grid points, 80 full-batch Adam steps, RK4 with 4 fixed steps (dopri5 is slower here),
three seeds."""
FULL_NEGATION = NegationConfig()
"""Full mode: 64 grid points, 400 full-batch Adam steps, dopri5 at 1e-3."""


def order_preserving_floor(n_points: int) -> float:
    """The MSE of the best non-decreasing fit to h(x) = -x on the ``n_points`` grid: the constant 0,
    so the mean of x^2, (n+1)/(3(n-1)) (1/3 as n grows). Computed, not published."""
    x, y = negation(n_points, dtype=torch.float64)
    return best_monotone_mse(y[:, 0].numpy(), increasing=True)


NEGATION_FIT_MSE = 0.01
"""The course's "fits" for h(x) = -x: 3 % of the order-preserving floor (about 1/3)."""
NEGATION_THRESHOLD = Threshold(
    "h(x)=-x on a grid in [-1,1], each flow re-solved (dopri5, 1e-6, float64): the 1-D flow's MSE >= the best "
    "order-preserving fit on that grid, (n+1)/(3(n-1)) (0.3778 on 16 points, 0.3439 on 64: a computed bound), "
    f"on every seed less {RESOLVE_SLACK:g} for the re-solve's error; the flow on R^2 with a projection readout: "
    f"MSE <= {NEGATION_FIT_MSE:g} (95 % interval over seeds)",
    kind="course",
    why="Zhang et al. 2020 prove that a homeomorphism of R^p is approximated by a flow on R^2p and give no "
        "figure; the floor is computed here (a 1-D flow's map is increasing; the best increasing fit of -x is 0); "
        f"{NEGATION_FIT_MSE:g} is the course's 'fits', 3 % of that floor",
)

_NEGATION_CACHE: dict[NegationConfig, dict[int, dict[str, FlowFit]]] = {}


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


def negation_study(config: NegationConfig) -> dict[int, dict[str, FlowFit]]:
    """Fit h(x) = -x with each model of :data:`NEGATION_MODELS` on every seed: seed -> name -> FlowFit.
    Cached per configuration."""
    if config not in _NEGATION_CACHE:
        x, y = negation(config.n_points, dtype=getattr(torch, config.dtype))
        out: dict[int, dict[str, FlowFit]] = {}
        for seed in config.seeds:
            out[seed] = {}
            for name in NEGATION_MODELS:
                torch.manual_seed(seed)
                model = build_negation_model(name, config)
                out[seed][name] = fit_flow(name, model, x, y, seed=seed, epochs=config.epochs, lr=config.lr,
                                           step_size=config.step_size)
        _NEGATION_CACHE[config] = out
    return _NEGATION_CACHE[config]


def negation_parts(resolved: dict[str, list[float]], floor: float, resolve_error: float = 0.0) -> dict:
    """Judge ``augmentation-2p`` from re-solved MSEs per seed (``{"1-D flow": [...], "R^2 flow + projection":
    [...]}``; fake values work) and the re-solve's measured error. Returns ``{"parts", "intervals", "reasons",
    "verdict"}``."""
    parts, iv, why = {}, {}, {}
    parts["1-D flow cannot"], why["1-D flow cannot"] = judge_bound(resolved["1-D flow"], floor, RESOLVE_SLACK,
                                                                   error=resolve_error)
    v, iv["R^2 flow fits"], why["R^2 flow fits"] = judge(resolved["R^2 flow + projection"], NEGATION_FIT_MSE,
                                                         above=False)
    parts["flow on R^2 fits"] = v
    return {"parts": parts, "intervals": iv, "reasons": why, "verdict": combine(parts)}


def negation_findings(study: dict[int, dict[str, FlowFit]], n_points: int) -> dict:
    """Per-model MSEs over seeds (as trained and re-solved), the floor, and the judged parts."""
    seeds = sorted(study)
    trained = {m: [study[s][m].mse for s in seeds] for m in NEGATION_MODELS}
    resolved = {m: [study[s][m].mse_resolved for s in seeds] for m in NEGATION_MODELS}
    floor = order_preserving_floor(n_points)
    error = max(study[s][m].resolve_error for s in seeds for m in NEGATION_MODELS)
    judged = negation_parts(resolved, floor, error)
    return {"seeds": seeds, "mse": trained, "mse_resolved": resolved, "floor": floor, "resolve_error": error,
            "judged": judged, "holds": judged["verdict"] is ClaimVerdict.HOLDS}


def _range(vals, fmt=".3g") -> str:
    return f"{min(vals):{fmt}}-{max(vals):{fmt}}"


@claim(
    id="augmentation-2p",
    claim="h(x)=-x on [-1,1]: a 1-D flow cannot go below the best order-preserving fit (MSE about 1/3); "
          "a flow on R^2 with a projection readout fits",
    source="Zhang et al. 2020 (Approximation capabilities of neural ODEs), homeomorphisms of R^p on R^2p; "
           "Dupont et al. 2019",
    published="any homeomorphism of R^p is approximated by a neural ODE on R^2p (a theorem, no figure)",
    lesson="03",
    threshold=NEGATION_THRESHOLD,
)
def measure_negation(quick: bool) -> Measurement:
    config = QUICK_NEGATION if quick else FULL_NEGATION
    f = negation_findings(negation_study(config), config.n_points)
    r, t, j = f["mse_resolved"], f["mse"], f["judged"]
    measured = (
        f"{len(f['seeds'])} seeds, re-solved MSE: 1-D flow {_range(r['1-D flow'], '.5f')} (floor "
        f"{f['floor']:.5f}); flow on R^2 {_interval_text(j['intervals']['R^2 flow fits'], '.2g')} (as trained "
        f"{_range(t['R^2 flow + projection'], '.2g')}); beside them, a 1-D flow + linear layer "
        f"{_range(r['1-D flow + linear'], '.2g')}. " + parts_text(j["parts"])
    )
    details = {"config": asdict(config), "floor": f["floor"], "mse_trained": t, "mse_resolved": r,
               "resolve_error": f["resolve_error"], "reasons": j["reasons"],
               "parts": {k: v.value for k, v in j["parts"].items()},
               "intervals": {k: None if i is None else asdict(i) for k, i in j["intervals"].items()}}
    return Measurement(measured, j["verdict"], details)


# --- h(x) = |x|: a flow with a linear readout, and what fixed steps let through --------------------

ABS_MODELS = ("R^2 flow + linear", "1-D flow + linear")


@dataclass(frozen=True)
class AbsConfig:
    """Sizes of the h(x) = |x| fits (hashable, so runs can be cached). Both models are trained with
    fixed RK4 steps of ``step_size`` and judged on an accurate re-solve."""

    n_points: int = 32
    epochs: int = 1000
    lr: float = 1e-2
    hidden: tuple[int, ...] = (32, 32)
    activation: str = "relu"
    step_size: float = 0.25
    seeds: tuple[int, ...] = tuple(range(10))
    dtype: str = "float32"


QUICK_ABS = AbsConfig(epochs=600, seeds=tuple(range(5)))
"""Quick mode: 600 full-batch Adam steps, five seeds."""
FULL_ABS = AbsConfig()
"""Full mode: 1000 full-batch Adam steps, ten seeds."""


def abs_data(n_points: int, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """h(x) = |x| on an even grid of ``n_points`` in [-1, 1]: ``(x, y)``, shape ``(n, 1)`` each."""
    x = torch.linspace(-1.0, 1.0, n_points, dtype=dtype).unsqueeze(1)
    return x, x.abs()


ABS_FIT_MSE = 1e-4
"""The course's "approximates |x|": 600 times below the best monotone fit."""
ABS_MONOTONE_BOUND = best_monotone_mse(abs_data(FULL_ABS.n_points, torch.float64)[1].numpy(), increasing=None)
"""The smallest MSE of any monotone map (either direction) to |x| on the 32-point grid: 0.0607, computed
here by isotonic regression (0.0572 in the continuum). A 1-D flow's map is increasing and a linear readout
keeps it monotone, so no 1-D flow + linear readout goes below it."""
assert QUICK_ABS.n_points == FULL_ABS.n_points, "one grid, one bound"

FLOW_READOUT_THRESHOLD = Threshold(
    f"h(x)=|x| on {FULL_ABS.n_points} grid points, flows re-solved (dopri5, 1e-6, float64): flow on R^2 + linear "
    f"readout MSE <= {ABS_FIT_MSE:g} (95 % interval over seeds); 1-D flow + linear readout MSE >= "
    f"{ABS_MONOTONE_BOUND:.4f} on every seed (less {RESOLVE_SLACK:g}), the best monotone fit on the grid, a bound "
    f"computed here by isotonic regression; the same 1-D model as trained with RK4 (step {FULL_ABS.step_size:g}): "
    f"MSE < {ABS_MONOTONE_BOUND:.4f} on at least one seed (a map below that bound is not monotone, so not invertible)",
    kind="course",
    why="Zhang et al. 2020 prove that a flow capped with one linear layer approximates non-invertible functions, "
        f"without a rate or a figure: {ABS_FIT_MSE:g} is the course's 'fits' (600x below the monotone bound). "
        "The bound is computed, not published. That a fixed-step model can learn a non-invertible map is the "
        "course's observation, a statement that something can happen: one seed below the bound shows it; the "
        "fraction of seeds is reported with its interval",
)

_ABS_CACHE: dict[AbsConfig, dict[int, dict[str, FlowFit]]] = {}


def build_abs_model(name: str, config: AbsConfig) -> torch.nn.Module:
    common = dict(hidden=config.hidden, activation=config.activation, method="rk4", step_size=config.step_size)
    if name == "R^2 flow + linear":
        return augmented_node(1, 1, readout="linear", **common)
    if name == "1-D flow + linear":
        return plain_node(1, readout="linear", **common)
    raise ValueError(f"model name {name!r} is unknown; use one of {ABS_MODELS}")


def abs_study(config: AbsConfig) -> dict[int, dict[str, FlowFit]]:
    """Fit h(x) = |x| with each model of :data:`ABS_MODELS` on every seed: seed -> name -> FlowFit. Cached."""
    if config not in _ABS_CACHE:
        x, y = abs_data(config.n_points, getattr(torch, config.dtype))
        out: dict[int, dict[str, FlowFit]] = {}
        for seed in config.seeds:
            out[seed] = {}
            for name in ABS_MODELS:
                torch.manual_seed(seed)
                out[seed][name] = fit_flow(name, build_abs_model(name, config), x, y, seed=seed,
                                           epochs=config.epochs, lr=config.lr, step_size=config.step_size)
        _ABS_CACHE[config] = out
    return _ABS_CACHE[config]


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    """The exact 95 % interval of a rate seen ``k`` times in ``n`` tries."""
    from scipy import stats

    lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    return lo, hi


def abs_parts(linear2: list[float], linear1_resolved: list[float], linear1_trained: list[float],
              bound: float = ABS_MONOTONE_BOUND, *, resolve_error: float = 0.0, min_seeds: int = 3) -> dict:
    """Judge ``flow-readout-noninvertible`` from per-seed MSEs (fake values work).

    ``linear2``: flow on R^2 + linear, re-solved; ``linear1_resolved`` / ``linear1_trained``: the 1-D flow +
    linear, re-solved and as trained (RK4); ``resolve_error``: the re-solve's measured error. Returns
    ``{"parts", "intervals", "reasons", "verdict", "below_bound", "rate_interval"}``.
    """
    parts, iv, why = {}, {}, {}
    v, iv["R^2 + linear"], why["R^2 + linear"] = judge(linear2, ABS_FIT_MSE, above=False, min_seeds=min_seeds)
    parts["flow on R^2 + linear approximates |x|"] = v
    v, why["1-D + linear re-solved"] = judge_bound(linear1_resolved, bound, RESOLVE_SLACK, error=resolve_error,
                                                         min_seeds=min_seeds)
    parts["1-D flow + linear cannot"] = v
    iv["1-D + linear re-solved"] = seed_interval(linear1_resolved) if len(linear1_resolved) >= 2 else None
    n, k = len(linear1_trained), sum(m < bound for m in linear1_trained)
    rate = clopper_pearson(k, n) if n else (0.0, 1.0)
    if n < min_seeds:
        v, why["fixed step"] = ClaimVerdict.NOT_MEASURABLE, f"{n} seed(s): too few (need {min_seeds})"
    elif k >= 1:
        v, why["fixed step"] = ClaimVerdict.HOLDS, f"{k}/{n} seeds below {bound:.4f} as trained"
    else:
        v, why["fixed step"] = (ClaimVerdict.NOT_MEASURABLE, f"no seed of {n} went below {bound:.4f} at this training "
                                "budget: that it can happen is neither shown nor refuted")
    parts["fixed-step 1-D model learns a non-invertible map"] = v
    iv["1-D + linear as trained"] = seed_interval(linear1_trained) if n >= 2 else None
    return {"parts": parts, "intervals": iv, "reasons": why, "verdict": combine(parts), "below_bound": k,
            "rate_interval": rate}


def abs_findings(study: dict[int, dict[str, FlowFit]]) -> dict:
    """Per-seed numbers of the |x| fits and the judged parts (:func:`abs_parts`)."""
    seeds = sorted(study)
    one = [study[s]["1-D flow + linear"] for s in seeds]
    values = {
        "R^2 + linear re-solved": [study[s]["R^2 flow + linear"].mse_resolved for s in seeds],
        "R^2 + linear as trained": [study[s]["R^2 flow + linear"].mse for s in seeds],
        "1-D + linear re-solved": [f.mse_resolved for f in one],
        "1-D + linear as trained": [f.mse for f in one],
        "1-D min slope of the RK4 map": [f.min_slope for f in one],
        "1-D h*Lip(f)": [f.h_lip for f in one],
    }
    error = max(study[s][m].resolve_error for s in seeds for m in ABS_MODELS)
    judged = abs_parts(values["R^2 + linear re-solved"], values["1-D + linear re-solved"],
                       values["1-D + linear as trained"], resolve_error=error)
    return {"seeds": seeds, "values": values, "judged": judged, "bound": ABS_MONOTONE_BOUND,
            "resolve_error": error, "rk4_invertible_hlip": rk4_invertible_hlip()}


@claim(
    id="flow-readout-noninvertible",
    claim="h(x)=|x| on [-1,1]: a flow on R^2 + linear readout approximates it (MSE < 1e-4); a 1-D flow + linear "
          "readout cannot beat the best monotone fit; trained with fixed RK4 steps, the same 1-D model can "
          "(its one-step map is invertible only while h*Lip(f) is small)",
    source="Zhang et al. 2020 (Approximation capabilities of neural ODEs), flow + one linear layer",
    published="a neural ODE capped with a single linear layer is a universal approximator of non-invertible "
              "continuous functions (a theorem, no figure)",
    lesson="03",
    threshold=FLOW_READOUT_THRESHOLD,
)
def measure_flow_readout(quick: bool) -> Measurement:
    config = QUICK_ABS if quick else FULL_ABS
    f = abs_findings(abs_study(config))
    v, j = f["values"], f["judged"]
    n = len(f["seeds"])
    k, (lo, hi) = j["below_bound"], j["rate_interval"]
    folded = [s for s, t in zip(f["seeds"], v["1-D + linear as trained"]) if t < f["bound"]]
    hl = [x for s, x in zip(f["seeds"], v["1-D h*Lip(f)"]) if s in folded]
    measured = (
        f"{n} seeds, MSE re-solved: flow on R^2 + linear {_interval_text(j['intervals']['R^2 + linear'], '.2g')}; "
        f"1-D flow + linear {_range(v['1-D + linear re-solved'], '.3f')} (monotone bound {f['bound']:.4f}). "
        f"As trained with RK4 step {config.step_size:g}, the 1-D model went below the bound on {k}/{n} seeds "
        f"(rate 95 % interval {lo:.2f}-{hi:.2f}; best {min(v['1-D + linear as trained']):.2g}"
        + (f"; h*Lip(f) {_range(hl, '.2f')} vs {f['rk4_invertible_hlip']:.2f} that guarantees an invertible step"
           if hl else "") + "). " + parts_text(j["parts"])
    )
    details = {"config": asdict(config), "bound": f["bound"], "per_seed": {k2: list(x) for k2, x in v.items()},
               "seeds": f["seeds"], "resolve_error": f["resolve_error"],
               "rk4_invertible_hlip": f["rk4_invertible_hlip"],
               "below_bound": k, "rate_interval": [lo, hi], "reasons": j["reasons"],
               "parts": {k2: x.value for k2, x in j["parts"].items()},
               "intervals": {k2: None if i is None else asdict(i) for k2, i in j["intervals"].items()}}
    return Measurement(measured, j["verdict"], details)
