"""Lesson 7 (capstone): four ways to spend depth on one task, measured side by side.

One task (scikit-learn's digits), one frame: embed the 64 pixels into a ``width``-dimensional
state, transform the state, read out 10 logits. Only the middle differs:

- ``ResNet``: ``blocks`` explicit residual blocks ``z <- z + g_k(z)``, each its own MLP;
- ``Neural ODE``: one field ``dz/dt = g(z)`` on ``[0, 1]``, dopri5, trained with the adjoint;
- ``DEQ``: one block, ``z* = g(z*) + x`` solved by Anderson acceleration, implicit backward;
- ``Unrolled``: the same block iterated a fixed ``k`` times from ``z = 0``, backprop through all.

The three single-block models have one MLP whose hidden width matches the ResNet's parameter
count (:func:`nodecourse.models.matched_field_width`). :func:`capstone_study` trains every model
on every seed and measures accuracy, parameters, training memory (saved for backward, and the
measured peak), forward work per input, and time; it is cached per configuration, so the notebook
and the ledger rows share one run.

Ledger rows: ``capstone-accuracy-parity``, ``capstone-training-memory``, ``capstone-step-mismatch``.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass, field

import torch
from torch import nn

from nodecourse.claims import Measurement, Verdict, claim
from nodecourse.data.digits import load_digits
from nodecourse.deq import DEQ, saved_tensor_bytes
from nodecourse.models import MLPField, ODEBlock, ResidualStack, count_parameters, matched_field_width
from nodecourse.solve_config import SolveConfig
from nodecourse.training import seeded_batches, train_epochs

MODELS = ("ResNet", "Neural ODE", "DEQ", "Unrolled")


@dataclass(frozen=True)
class CapstoneConfig:
    """Sizes and solver settings of the comparison (hashable, so runs can be cached)."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    epochs: int = 30
    batch_size: int = 128
    lr: float = 3e-3
    width: int = 32
    blocks: int = 4
    hidden: int = 64
    ode_method: str = "dopri5"
    ode_tol: float = 1e-3
    ode_gradient: str = "adjoint"
    deq_solver: str = "anderson"
    deq_tol: float = 1e-4
    deq_max_iter: int = 40
    unrolled_steps: int = 4
    memory_batch: int = 256
    mismatch_steps: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    per_input_samples: int = 100
    n_samples: int | None = None


QUICK_CAPSTONE = CapstoneConfig(seeds=(0, 1), epochs=5)
"""Quick mode: two seeds, five epochs (accuracies are lower and noisier than in full mode)."""
FULL_CAPSTONE = CapstoneConfig()
"""Full mode: five seeds, thirty epochs."""


# --- the four middles -------------------------------------------------------------------------

class InjectedBlock(nn.Module):
    """``g(z) + x``: one tanh MLP ``width -> hidden -> width`` on the state plus the injected input.

    Its last layer starts at half the default scale, so the map ``z -> g(z) + x`` starts contractive
    (a DEQ needs a fixed point to find). ``(batch, width), (batch, width) -> (batch, width)``.
    """

    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.g = MLPField(width, (hidden,), activation="tanh")
        with torch.no_grad():
            self.g.net[-1].weight.mul_(0.5)

    def forward(self, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return self.g(None, z) + x


class ODECore(ODEBlock):
    """``z(0) -> z(1)`` under ``dz/dt = g(z)``: an :class:`ODEBlock` (``last_stats`` after each solve).

    The gradient mode applies when a gradient is wanted; evaluation (no grad) solves
    plainly, and with ``per_sample = True`` every input gets its own steps and its own NFE.
    """

    def __init__(self, width: int, hidden: int, *, method: str, tol: float, gradient: str):
        super().__init__(MLPField(width, (hidden,), activation="tanh"),
                         solver=SolveConfig(method=method, rtol=tol, atol=tol, gradient=gradient))
        self.per_sample = False

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        if not torch.is_grad_enabled():
            return self.solve(z, gradient="backprop", per_sample=self.per_sample).ys[-1]
        return self.solve(z).ys[-1]


class DEQCore(nn.Module):
    """``z* = g(z*) + x`` (:class:`InjectedBlock`) solved by :class:`nodecourse.deq.DEQ`, implicit backward."""

    def __init__(self, width: int, hidden: int, *, solver: str, tol: float, max_iter: int):
        super().__init__()
        self.block = InjectedBlock(width, hidden)
        self.deq = DEQ(self.block, solver=solver, tol=tol, max_iter=max_iter, state=width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.deq(x)


class UnrolledCore(nn.Module):
    """The same block as the DEQ iterated ``steps`` times from ``z = 0`` (weight-tied, backprop through all)."""

    def __init__(self, width: int, hidden: int, steps: int):
        super().__init__()
        self.block = InjectedBlock(width, hidden)
        self.steps = steps

    def forward(self, x: torch.Tensor, steps: int | None = None) -> torch.Tensor:
        z = torch.zeros_like(x)
        for _ in range(self.steps if steps is None else steps):
            z = self.block(z, x)
        return z


class DepthClassifier(nn.Module):
    """``Linear(64, width) -> core -> Linear(width, 10)``: logits ``(batch, 10)`` from pixels ``(batch, 64)``."""

    def __init__(self, core: nn.Module, width: int, n_in: int = 64, n_classes: int = 10):
        super().__init__()
        self.embed = nn.Linear(n_in, width)
        self.core = core
        self.readout = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.core(self.embed(x)))


def single_block_hidden(config: CapstoneConfig) -> int:
    """Hidden width of the one block of the ODE, DEQ and unrolled models, matched to the ResNet's blocks."""
    return matched_field_width(config.width, config.blocks, config.hidden)


def build_model(name: str, config: CapstoneConfig, *, blocks: int | None = None, steps: int | None = None,
                tol: float | None = None) -> DepthClassifier:
    """A fresh model ``name`` of :data:`MODELS`; ``blocks``/``steps``/``tol`` override the depth knob."""
    w, h1 = config.width, single_block_hidden(config)
    if name == "ResNet":
        core = ResidualStack(w, n_blocks=blocks or config.blocks, hidden=(config.hidden,), activation="tanh")
    elif name == "Neural ODE":
        core = ODECore(w, h1, method=config.ode_method, tol=tol or config.ode_tol, gradient=config.ode_gradient)
    elif name == "DEQ":
        core = DEQCore(w, h1, solver=config.deq_solver, tol=tol or config.deq_tol, max_iter=config.deq_max_iter)
    elif name == "Unrolled":
        core = UnrolledCore(w, h1, steps or config.unrolled_steps)
    else:
        raise ValueError(f"model name {name!r} is unknown; use one of {MODELS}")
    return DepthClassifier(core, w)


def forward_work(model: DepthClassifier) -> float:
    """Evaluations of the depth block in the last forward pass (blocks, NFE or iterations)."""
    core = model.core
    if isinstance(core, ResidualStack):
        return float(core.n_blocks)
    if isinstance(core, ODECore):
        return float(core.last_stats["nfe"])
    if isinstance(core, DEQCore):
        return float(core.deq.stats["forward_iters"])
    return float(core.steps)


# --- one trained model ------------------------------------------------------------------------

@dataclass
class CapstoneRun:
    """One model trained on one seed, and what was measured on it."""

    name: str
    seed: int
    model: DepthClassifier
    n_parameters: int
    accuracy: float
    train_seconds: float
    inference_seconds_per_1000: float
    saved_bytes: int
    peak_bytes: int | None
    work_per_epoch: list[float] = field(default_factory=list)
    work_per_input: list[float] = field(default_factory=list)
    backward_work: float | None = None


def _accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).double().mean().item()


def _training_step_memory(model: DepthClassifier, x: torch.Tensor, y: torch.Tensor) -> tuple[int, int | None]:
    """(bytes autograd saves for backward in one training step, measured peak bytes of forward+backward
    or None where the peak cannot be measured on this platform)."""
    from nodecourse import memory

    params = list(model.parameters())

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        model.zero_grad(set_to_none=True)

    saved = saved_tensor_bytes(lambda: nn.functional.cross_entropy(model(x), y), exclude=tuple(params))
    model.zero_grad(set_to_none=True)
    device = x.device
    peak = None
    if device.type == "cuda" or (device.type == "cpu" and memory.cpu_peak_supported()):
        peak = memory.measure_peak(step, device)
    return int(saved), peak


def per_input_work(model: DepthClassifier, x: torch.Tensor) -> list[float]:
    """Forward work for each input separately: per-sample NFE for the ODE (each input its own steps),
    iterations of a one-input solve for the DEQ; the fixed depth for ResNet and unrolled."""
    core = model.core
    with torch.no_grad():
        if isinstance(core, ODECore):
            core.per_sample = True
            try:
                model(x)
            finally:
                core.per_sample = False
            return [float(v) for v in core.last_stats["nfe_per_sample"].detach().cpu()]
        if isinstance(core, DEQCore):
            out = []
            for xi in x:
                model(xi[None])
                out.append(float(core.deq.stats["forward_iters"]))
            return out
        return [forward_work(model)] * len(x)


def train_capstone_model(name: str, seed: int, config: CapstoneConfig, *, data=None, device=None,
                         progress: bool = False) -> CapstoneRun:
    """Train model ``name`` on the digits split of ``seed`` (weights seeded too) and measure it."""
    data = data or load_digits(seed=seed, n_samples=config.n_samples, device=device or "cpu")
    torch.manual_seed(seed)
    model = build_model(name, config).to(data.x_train.device)
    x, y = data.x_train, data.y_train
    works: list[float] = []

    def loss_on_batch(idx):
        logits = model(x[idx])
        return nn.functional.cross_entropy(logits, y[idx]), {"work": forward_work(model), "batches": 1}

    def on_epoch(row, _model):
        works.append(row["work"] / row["batches"])

    start = time.perf_counter()
    train_epochs(model, loss_on_batch, seeded_batches(len(y), config.batch_size, seed=seed, device=y.device),
                 epochs=config.epochs, optimizer=torch.optim.Adam(model.parameters(), lr=config.lr),
                 on_epoch=on_epoch, progress=progress, desc=f"{name} seed {seed}")
    train_seconds = time.perf_counter() - start
    backward = None
    if isinstance(model.core, ODECore):
        backward = float(model.core.last_stats.get("nfe_backward", 0))
    elif isinstance(model.core, DEQCore):
        backward = float(model.core.deq.stats.get("backward_iters") or 0)
    model.eval()
    start = time.perf_counter()
    acc = _accuracy(model, data.x_test, data.y_test)
    inference = (time.perf_counter() - start) * 1000 / len(data.y_test)
    model.train()
    saved, peak = _training_step_memory(model, x[: config.memory_batch], y[: config.memory_batch])
    model.eval()
    per_input = per_input_work(model, data.x_test[: config.per_input_samples])
    return CapstoneRun(name, seed, model, count_parameters(model), acc, train_seconds, inference, saved, peak,
                       works, per_input, backward)


_CAPSTONE_CACHE: dict[CapstoneConfig, tuple[CapstoneRun, ...]] = {}


def capstone_study(config: CapstoneConfig = QUICK_CAPSTONE, *, progress: bool = False) -> tuple[CapstoneRun, ...]:
    """Train every model of :data:`MODELS` on every seed of ``config``; cached per configuration."""
    if config not in _CAPSTONE_CACHE:
        from tqdm.auto import tqdm

        jobs = [(name, seed) for seed in config.seeds for name in MODELS]
        runs = []
        data_by_seed = {s: load_digits(seed=s, n_samples=config.n_samples) for s in config.seeds}
        for name, seed in tqdm(jobs, desc="capstone runs", disable=not progress, leave=False):
            runs.append(train_capstone_model(name, seed, config, data=data_by_seed[seed]))
        _CAPSTONE_CACHE[config] = tuple(runs)
    return _CAPSTONE_CACHE[config]


def _mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def summary_table(runs) -> list[dict]:
    """One row per model: accuracy mean and sd over seeds, parameters, memory, work, times."""
    rows = []
    for name in MODELS:
        rs = [r for r in runs if r.name == name]
        acc_mean, acc_sd = _mean_sd([r.accuracy for r in rs])
        per_input = [w for r in rs for w in r.work_per_input]
        peaks = [r.peak_bytes for r in rs if r.peak_bytes is not None]
        rows.append({
            "model": name,
            "accuracy_mean": acc_mean, "accuracy_sd": acc_sd, "seeds": len(rs),
            "parameters": rs[0].n_parameters,
            "saved_kib": statistics.fmean(r.saved_bytes for r in rs) / 1024,
            "peak_mib": statistics.fmean(peaks) / 2**20 if peaks else None,
            "work_mean": statistics.fmean(per_input), "work_min": min(per_input), "work_max": max(per_input),
            "work_last_epoch": statistics.fmean(r.work_per_epoch[-1] for r in rs),
            "work_first_epoch": statistics.fmean(r.work_per_epoch[0] for r in rs),
            "backward_work": (statistics.fmean(r.backward_work for r in rs)
                              if rs[0].backward_work is not None else None),
            "train_s": statistics.fmean(r.train_seconds for r in rs),
            "inference_ms_per_1000": statistics.fmean(r.inference_seconds_per_1000 for r in rs) * 1000,
        })
    return rows


WORK_UNITS = {"ResNet": "blocks", "Neural ODE": "NFE", "DEQ": "iterations", "Unrolled": "steps"}


def format_summary(rows: list[dict], annulus: dict[str, str] | None = None) -> str:
    """The capstone table as Markdown (for ``IPython.display.Markdown``)."""
    head = ("| model | test accuracy (mean ± sd) | parameters | saved for backward (KiB) | peak training "
            "memory (MiB) | forward work per input | train time (s) | inference (ms / 1000 inputs) | annulus |")
    lines = [head, "|" + "---|" * 9]
    for r in rows:
        unit = WORK_UNITS[r["model"]]
        work = (f"{r['work_mean']:.0f} {unit}" if r["work_min"] == r["work_max"]
                else f"{r['work_mean']:.1f} {unit} ({r['work_min']:.0f}–{r['work_max']:.0f})")
        peak = "n/a" if r["peak_mib"] is None else f"{r['peak_mib']:.1f}"
        lines.append(
            f"| {r['model']} | {100 * r['accuracy_mean']:.1f} ± {100 * r['accuracy_sd']:.1f} % ({r['seeds']} seeds) "
            f"| {r['parameters']:,} | {r['saved_kib']:.0f} | {peak} | {work} | {r['train_s']:.1f} "
            f"| {r['inference_ms_per_1000']:.0f} | {(annulus or {}).get(r['model'], 'not measured')} |"
        )
    return "\n".join(lines)


# --- the annulus row, from lesson 3's measurement --------------------------------------------

def annulus_row(quick: bool = True) -> dict[str, str]:
    """"Can it represent the annulus", per model, from lesson 3's study (same configuration as its
    ledger row, so the runs are shared when both run in one process). Lesson 3 trained a plain
    neural ODE and a ResNet; the DEQ and the unrolled block were not trained on the annulus."""
    from nodecourse.lessons import lesson03

    config = lesson03.QUICK_ANNULUS if quick else lesson03.FULL_ANNULUS
    runs = lesson03.annulus_study(config)
    f = lesson03.annulus_findings(runs)
    n = len(config.seeds)
    arc = sum(f["node_has_wrong_arc"].values())
    by = {(r.model_name, r.seed): r for r in runs}
    resnet_ok = sum(by["ResNet", s].probes[1.25].min_margin > 0 for s in config.seeds)
    anode_ok = sum(by["ANODE", s].probes[1.25].min_margin > 0 for s in config.seeds)
    return {
        "ResNet": f"yes: positive margin on |x|=1.25 on {resnet_ok}/{n} seeds (lesson 3)",
        "Neural ODE": (f"not in its own dimension: wrong arc on |x|=1.25 on {arc}/{n} seeds; with one extra "
                       f"dimension, margin positive on {anode_ok}/{n} (lesson 3)"),
        "DEQ": "not measured (lesson 3 trained the flows and a ResNet only)",
        "Unrolled": "not measured (lesson 3 trained the flows and a ResNet only)",
    }


# --- step-count mismatch and DEQ iterations at inference --------------------------------------

@torch.no_grad()
def step_mismatch(runs, config: CapstoneConfig) -> dict:
    """Test accuracy of each trained unrolled model evaluated with other step counts, and of each DEQ
    with a looser and a tighter solve. Returns ``{"unrolled": {k: [acc per seed]}, "deq": {label: [...]}}``."""
    out = {"unrolled": {k: [] for k in config.mismatch_steps}, "deq": {}}
    for r in runs:
        data = load_digits(seed=r.seed, n_samples=config.n_samples, device=r.model.embed.weight.device)
        if r.name == "Unrolled":
            core = r.model.core
            for k in config.mismatch_steps:
                trained = core.steps
                core.steps = k
                try:
                    out["unrolled"][k].append(_accuracy(r.model, data.x_test, data.y_test))
                finally:
                    core.steps = trained
        elif r.name == "DEQ":
            deq = r.model.core.deq
            settings = (deq.tol, deq.max_iter)
            for label, tol, max_iter in (("as trained", deq.tol, deq.max_iter),
                                         ("tol x 100", deq.tol * 100, deq.max_iter),
                                         ("tol / 100, 4x iterations", deq.tol / 100, deq.max_iter * 4)):
                deq.tol, deq.max_iter = tol, max_iter
                try:
                    acc = _accuracy(r.model, data.x_test, data.y_test)
                    out["deq"].setdefault(label, []).append(acc)
                    out["deq"].setdefault(label + " iterations", []).append(float(deq.stats["forward_iters"]))
                finally:
                    deq.tol, deq.max_iter = settings
    return out


def mismatch_findings(mismatch: dict, config: CapstoneConfig, drop_points: float = 5.0,
                      deq_slack_points: float = 1.0) -> dict:
    """Does the unrolled block lose >= ``drop_points`` at some other step count (mean over seeds),
    while the DEQ's accuracy moves by <= ``deq_slack_points`` under a tighter solve?"""
    un = {k: 100 * statistics.fmean(v) for k, v in mismatch["unrolled"].items()}
    trained = un[config.unrolled_steps]
    worst_k = min((k for k in un if k != config.unrolled_steps), key=lambda k: un[k])
    deq_as = 100 * statistics.fmean(mismatch["deq"]["as trained"])
    deq_tight = 100 * statistics.fmean(mismatch["deq"]["tol / 100, 4x iterations"])
    unrolled_drops = trained - un[worst_k] >= drop_points
    deq_stable = abs(deq_tight - deq_as) <= deq_slack_points
    return {"unrolled_by_steps": un, "worst_steps": worst_k, "unrolled_drop": trained - un[worst_k],
            "deq_as_trained": deq_as, "deq_tight": deq_tight, "unrolled_drops": unrolled_drops,
            "deq_stable": deq_stable, "holds": unrolled_drops and deq_stable}


# --- memory against depth ---------------------------------------------------------------------

def memory_vs_depth(config: CapstoneConfig, seed: int = 0) -> dict:
    """Bytes saved for backward in one training step (batch ``memory_batch``), each model at three
    depths: ResNet and unrolled with 1x, 2x, 3x the blocks/steps; the ODE at its tolerance, 100x and
    10,000x tighter (more solver steps), the DEQ at 1x, 10x, 100x tighter (more iterations). Untrained, seeded
    models: the bytes depend on the graph, not on the weights' values.

    Returns ``{model: [{"depth", "saved_bytes", "work"}, ...]}`` (three rows each).
    """
    data = load_digits(seed=seed, n_samples=config.n_samples)
    x, y = data.x_train[: config.memory_batch], data.y_train[: config.memory_batch]
    out = {}
    for name in MODELS:
        rows = []
        for label, kw in _depths(name, config):
            torch.manual_seed(seed)
            model = build_model(name, config, **kw)
            saved = saved_tensor_bytes(lambda: nn.functional.cross_entropy(model(x), y),
                                       exclude=tuple(model.parameters()))
            rows.append({"depth": label, "saved_bytes": int(saved), "work": forward_work(model)})
        out[name] = rows
    return out


def _depths(name: str, config: CapstoneConfig) -> list[tuple[str, dict]]:
    if name == "ResNet":
        return [(f"{m * config.blocks} blocks", {"blocks": m * config.blocks}) for m in (1, 2, 3)]
    if name == "Unrolled":
        return [(f"{m * config.unrolled_steps} steps", {"steps": m * config.unrolled_steps}) for m in (1, 2, 3)]
    # float32 states: a DEQ's relative residual stalls near 1e-6, so its tolerances stop at 100x tighter
    tol, factors = (config.ode_tol, (1.0, 1e-2, 1e-4)) if name == "Neural ODE" else (config.deq_tol, (1.0, 1e-1, 1e-2))
    return [(f"tol {tol * f:g}", {"tol": tol * f}) for f in factors]


def memory_findings(mem: dict) -> dict:
    """Constant (ODE, DEQ: saved bytes equal within 2 % while the work grows) and linear (ResNet,
    unrolled: equal positive increments per added depth, within 5 %)."""
    found = {}
    for name, rows in mem.items():
        b = [r["saved_bytes"] for r in rows]
        work_grows = rows[-1]["work"] > rows[0]["work"]
        if name in ("Neural ODE", "DEQ"):
            ok = max(b) <= 1.02 * min(b)
        else:
            d1, d2 = b[1] - b[0], b[2] - b[1]
            ok = d1 > 0 and abs(d2 - d1) <= 0.05 * d1
        found[name] = {"ok": ok, "work_grows": work_grows, "bytes": b, "work": [r["work"] for r in rows]}
    return found


# --- ledger rows --------------------------------------------------------------------------------

def _config(quick: bool) -> CapstoneConfig:
    return QUICK_CAPSTONE if quick else FULL_CAPSTONE


def accuracy_findings(rows: list[dict], gap_points: float = 2.0, trained_floor: float = 0.85) -> dict:
    """All four within ``gap_points`` (or two pooled standard deviations, if larger) of the best mean;
    ``not measurable`` when some model has not reached ``trained_floor`` (under-trained, quick mode)."""
    means = {r["model"]: 100 * r["accuracy_mean"] for r in rows}
    sds = [100 * r["accuracy_sd"] for r in rows]
    pooled = (statistics.fmean(s * s for s in sds)) ** 0.5
    allowed = max(gap_points, 2 * pooled)
    best = max(means.values())
    gap = best - min(means.values())
    trained = min(means.values()) >= 100 * trained_floor
    return {"means": means, "gap": gap, "allowed": allowed, "trained": trained,
            "holds": trained and gap <= allowed}


@claim(
    id="capstone-accuracy-parity",
    claim="At matched parameter count, an explicit ResNet, a neural ODE, a DEQ and an unrolled shared block "
          "reach about the same test accuracy (digits)",
    source="Chen et al. 2018 (Neural ODEs), table 1; Bai et al. 2019 (Deep Equilibrium Models)",
    published="MNIST test error: ResNet 0.41 % (0.60 M params), ODE-Net 0.42 % (0.22 M), RK-Net 0.47 % (0.22 M)",
    lesson="07",
)
def measure_accuracy_parity(quick: bool) -> Measurement:
    config = _config(quick)
    rows = summary_table(capstone_study(config))
    f = accuracy_findings(rows)
    params = [r["parameters"] for r in rows]
    measured = ("test accuracy " + ", ".join(
        f"{r['model']} {100 * r['accuracy_mean']:.1f}±{100 * r['accuracy_sd']:.1f}%" for r in rows)
        + f" ({len(config.seeds)} seeds, {config.epochs} epochs; parameters {min(params):,}–{max(params):,}); "
        f"largest gap {f['gap']:.1f} points (allowed {f['allowed']:.1f})")
    if len(config.seeds) < 3:
        verdict = Verdict.NOT_MEASURABLE
        measured += f"; {len(config.seeds)} seeds cannot measure the spread the claim is judged against: run full mode"
    elif not f["trained"]:
        verdict = Verdict.NOT_MEASURABLE
        measured += "; some model is below 85 %: under-trained at this scale, run full mode"
    else:
        verdict = Verdict.HOLDS if f["holds"] else Verdict.DOES_NOT_HOLD
    return Measurement(measured, verdict, {"config": asdict(config), "rows": rows, **f})


@claim(
    id="capstone-training-memory",
    claim="Training memory: the neural ODE (adjoint) and the DEQ (implicit backward) save the same for backward "
          "whatever their depth (steps, iterations); the ResNet and the unrolled block save more with every block/step",
    source="Chen et al. 2018, table 1 (O(1) vs O(L) memory); Bai et al. 2019, sec. 3.3",
    published="ODE-Net O(1) memory, ResNet O(L); DEQ constant memory (up to 88 % less than its explicit peers)",
    lesson="07",
)
def measure_training_memory(quick: bool) -> Measurement:
    config = _config(quick)
    mem = memory_vs_depth(config)
    f = memory_findings(mem)
    measured = "; ".join(
        f"{n}: " + "/".join(f"{w:.0f}" for w in f[n]["work"]) + f" {WORK_UNITS[n]} -> saved "
        + "/".join(f"{b / 1024:.0f}" for b in f[n]["bytes"]) + " KiB" for n in MODELS)
    if not all(f[n]["work_grows"] for n in MODELS):
        verdict = Verdict.NOT_MEASURABLE
        measured += "; a tighter tolerance did not add work for " + ", ".join(
            n for n in MODELS if not f[n]["work_grows"])
    else:
        verdict = Verdict.HOLDS if all(f[n]["ok"] for n in MODELS) else Verdict.DOES_NOT_HOLD
    return Measurement(measured, verdict, {"memory": mem, "findings": f})


@claim(
    id="capstone-step-mismatch",
    claim="A weight-tied block unrolled k times and trained that way loses accuracy when run with another number "
          "of steps; a DEQ built from the same block gives the same accuracy with a tighter solve",
    source="Ott et al. 2021 (ResNet after all? Neural ODEs and their numerical solution); Bai et al. 2019",
    published="accuracy drops when the test-time discretisation differs from training (Ott et al.); "
              "a DEQ's output is the fixed point, whatever the solver path",
    lesson="07",
)
def measure_step_mismatch(quick: bool) -> Measurement:
    config = _config(quick)
    runs = capstone_study(config)
    mm = step_mismatch(runs, config)
    f = mismatch_findings(mm, config)
    un = f["unrolled_by_steps"]
    measured = (f"unrolled trained with {config.unrolled_steps} steps: "
                + ", ".join(f"{k} steps {un[k]:.1f}%" for k in config.mismatch_steps)
                + f"; DEQ as trained {f['deq_as_trained']:.1f}%, tol/100 {f['deq_tight']:.1f}%")
    return Measurement(measured, Verdict.HOLDS if f["holds"] else Verdict.DOES_NOT_HOLD,
                       {"mismatch": mm, **{k: v for k, v in f.items()}})


__all__ = ["MODELS", "CapstoneConfig", "CapstoneRun", "QUICK_CAPSTONE", "FULL_CAPSTONE", "annulus_row",
           "build_model", "capstone_study", "format_summary", "memory_findings", "memory_vs_depth", "mismatch_findings",
           "step_mismatch", "summary_table"]
