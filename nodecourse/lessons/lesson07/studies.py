"""Lesson 7's studies: train the four models on every seed and measure them; each study is cached per
arguments (:func:`~nodecourse.lessons.study.cached_study`), so the notebook and the ledger rows read one run.

Why this module is long: every lesson package keeps its measurements in one module (``lessonNN/studies.py``),
which the notebook, the findings and the ledger rows call; lesson 7 has six studies (the capstone's training,
the step mismatch, memory against depth, the reduction peers, the tolerance sweep, the timings).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, replace

import torch
from torch import nn

from nodecourse.data import load_digits
from nodecourse.lessons.study import cached_study
from nodecourse.measure import saved_tensor_bytes
from nodecourse.models import (
    DepthClassifier,
    DEQCore,
    ODECore,
    ResidualStack,
    UnrolledCore,
    count_parameters,
    matched_field_width,
)
from nodecourse.training import seeded_batches, train_epochs

from .config import DIAL_TOLERANCES, MODELS, QUICK_CAPSTONE, REDUCTION_DEPTHS, SAME_POINT, CapstoneConfig

__all__ = [
    "DEQ_SOLVES",
    "CapstoneRun",
    "DepthMemory",
    "DialSolve",
    "PeerBytes",
    "RandomStart",
    "StepMismatch",
    "Timings",
    "build_model",
    "capstone_study",
    "forward_work",
    "matched_resnet_config",
    "memory_vs_depth",
    "ode_tolerance_sweep",
    "per_input_work",
    "reduction_peers",
    "single_block_hidden",
    "step_mismatch",
    "step_mismatch_study",
    "timing_study",
    "train_capstone_model",
]


def single_block_hidden(config: CapstoneConfig) -> int:
    """Hidden width of the one block of the ODE, DEQ and unrolled models, matched to the ResNet's blocks."""
    return matched_field_width(config.width, config.blocks, config.hidden)


def build_model(
    name: str, config: CapstoneConfig, *, blocks: int | None = None, steps: int | None = None, tol: float | None = None
) -> DepthClassifier:
    """A fresh model ``name`` of :data:`MODELS`; ``blocks``/``steps``/``tol`` override the depth knob."""
    w, h1 = config.width, single_block_hidden(config)
    if name == "ResNet":
        core = ResidualStack(w, n_blocks=blocks or config.blocks, hidden=(config.hidden,), activation="tanh")
    elif name == "Neural ODE":
        core = ODECore(w, h1, method=config.ode_method, tol=tol or config.ode_tol, gradient=config.ode_gradient)
    elif name == "DEQ":
        core = DEQCore(w, h1, method=config.deq_method, tol=tol or config.deq_tol, max_iter=config.deq_max_iter)
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


@dataclass(frozen=True)
class CapstoneRun:
    """One model trained on one seed, and what was measured on it.

    Frozen, its work lists stored as tuples: :func:`capstone_study` caches its runs and hands every
    caller the same objects, so no caller can change what the next one reads. (``model`` is the trained
    module itself, shared too: evaluate it, do not train it further.)"""

    name: str
    seed: int
    model: DepthClassifier
    n_parameters: int
    accuracy: float
    train_seconds: float
    inference_seconds_per_1000: float
    saved_bytes: int
    peak_bytes: int | None
    work_per_epoch: tuple[float, ...] = ()
    work_per_input: tuple[float, ...] = ()
    backward_work: float | None = None

    def __post_init__(self):
        # lists given by a caller become tuples, so the cached run cannot be appended to
        object.__setattr__(self, "work_per_epoch", tuple(self.work_per_epoch))
        object.__setattr__(self, "work_per_input", tuple(self.work_per_input))


def _accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        return (model(x).argmax(dim=1) == y).double().mean().item()


def _training_step_memory(model: DepthClassifier, x: torch.Tensor, y: torch.Tensor) -> tuple[int, int | None]:
    """(bytes autograd saves for backward in one training step, measured peak bytes of forward+backward
    or None where the peak cannot be measured on this platform)."""
    from nodecourse.measure import cpu_peak_supported, measure_peak

    params = list(model.parameters())

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        model.zero_grad(set_to_none=True)

    saved = saved_tensor_bytes(lambda: nn.functional.cross_entropy(model(x), y), exclude=tuple(params))
    model.zero_grad(set_to_none=True)
    device = x.device
    peak = None
    if device.type == "cuda" or (device.type == "cpu" and cpu_peak_supported()):
        peak = measure_peak(step, device)
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


def train_capstone_model(
    name: str, seed: int, config: CapstoneConfig, *, data=None, device=None, progress: bool = False
) -> CapstoneRun:
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
    train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(y), config.batch_size, seed=seed, device=y.device),
        epochs=config.epochs,
        optimizer=torch.optim.Adam(model.parameters(), lr=config.lr),
        on_epoch=on_epoch,
        progress=progress,
        desc=f"{name} seed {seed}",
    )
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
    return CapstoneRun(
        name,
        seed,
        model,
        count_parameters(model),
        acc,
        train_seconds,
        inference,
        saved,
        peak,
        works,
        per_input,
        backward,
    )


@cached_study
def capstone_study(config: CapstoneConfig = QUICK_CAPSTONE, *, progress: bool = False) -> tuple[CapstoneRun, ...]:
    """Train every model of :data:`MODELS` on every seed of ``config``."""
    from tqdm.auto import tqdm

    jobs = [(name, seed) for seed in config.seeds for name in MODELS]
    data_by_seed = {s: load_digits(seed=s, n_samples=config.n_samples) for s in config.seeds}
    return tuple(
        train_capstone_model(name, seed, config, data=data_by_seed[seed])
        for name, seed in tqdm(jobs, desc="capstone runs", disable=not progress, leave=False)
    )


DEQ_SOLVES = ("as trained", "tol x 100", "tol / 100, 4x iterations")
"""The DEQ solves of :func:`step_mismatch`: the training settings, a 100x looser tolerance, and a 100x
tighter one with four times the iterations."""


@dataclass(frozen=True)
class RandomStart:
    """One trained DEQ (one seed) solved on its whole test split from a random start as well as from zero.

    ``accuracy``: test accuracy (fraction) from the random start; ``inputs``: test inputs;
    ``both_converged``: inputs whose solves from both starts reached the tolerance; ``other_point``: of
    those, inputs whose two fixed points differ by more than ``SAME_POINT`` tolerances (a second fixed
    point); ``distance``: the largest ``|z*_random - z*_zero| / |z*_zero|`` over those inputs (0 if none).
    """

    accuracy: float
    inputs: int
    both_converged: int
    other_point: int
    distance: float


@dataclass(frozen=True)
class StepMismatch:
    """Test accuracy (fraction) of the trained models at other depths than they were trained with, one
    entry per seed in every tuple (seeds in run order).

    ``unrolled``: step count -> accuracy of the unrolled model run with that many steps;
    ``deq``: solve label (:data:`DEQ_SOLVES`) -> accuracy of the DEQ; ``deq_iterations``: the same labels
    -> forward iterations of that solve; ``random_start``: one :class:`RandomStart` per seed.
    """

    unrolled: dict[int, tuple[float, ...]]
    deq: dict[str, tuple[float, ...]]
    deq_iterations: dict[str, tuple[float, ...]]
    random_start: tuple[RandomStart, ...]

    def as_dict(self) -> dict:
        """For a row's ``details`` (JSON): ``{"unrolled": {"k": [...]}, "deq": {label: [...], "<label>
        iterations": [...], "random start": [...], "random start inputs": [...], ...}}``."""
        deq: dict[str, list] = {}
        for label in self.deq:
            deq[label] = list(self.deq[label])
            deq[label + " iterations"] = list(self.deq_iterations[label])
        starts = self.random_start
        if starts:
            deq["random start"] = [s.accuracy for s in starts]
            deq["random start inputs"] = [s.inputs for s in starts]
            deq["random start both converged"] = [s.both_converged for s in starts]
            deq["random start other point"] = [s.other_point for s in starts]
            deq["random start distance"] = [s.distance for s in starts]
        return {"unrolled": {str(k): list(v) for k, v in self.unrolled.items()}, "deq": deq}


@torch.no_grad()
def step_mismatch(runs, config: CapstoneConfig) -> StepMismatch:
    """Test accuracy of each trained unrolled model evaluated with other step counts (``mismatch_steps``),
    of each DEQ with a looser and a tighter solve (:data:`DEQ_SOLVES`), and from a random start instead of
    zero (the fixed point is unique only if both starts land on the same point).
    """
    unrolled: dict[int, list[float]] = {k: [] for k in config.mismatch_steps}
    deq_acc: dict[str, list[float]] = {}
    deq_iters: dict[str, list[float]] = {}
    starts = []
    for r in runs:
        data = load_digits(seed=r.seed, n_samples=config.n_samples, device=r.model.embed.weight.device)
        if r.name == "Unrolled":
            core = r.model.core
            for k in config.mismatch_steps:
                trained = core.steps
                core.steps = k
                try:
                    unrolled[k].append(_accuracy(r.model, data.x_test, data.y_test))
                finally:
                    core.steps = trained
        elif r.name == "DEQ":
            deq = r.model.core.deq
            settings = (deq.tol, deq.max_iter)
            for label, tol, max_iter in zip(
                DEQ_SOLVES,
                (deq.tol, deq.tol * 100, deq.tol / 100),
                (deq.max_iter, deq.max_iter, deq.max_iter * 4),
            ):
                deq.tol, deq.max_iter = tol, max_iter
                try:
                    deq_acc.setdefault(label, []).append(_accuracy(r.model, data.x_test, data.y_test))
                    deq_iters.setdefault(label, []).append(float(deq.stats["forward_iters"]))
                finally:
                    deq.tol, deq.max_iter = settings
            # The answer is independent of the solver's path only if the fixed point is unique: start
            # somewhere else and see whether the solve lands on the same point.
            x = r.model.embed(data.x_test)
            z_zero = deq(x)
            ok_zero = deq.forward_result.converged
            gen = torch.Generator(device="cpu").manual_seed(r.seed)
            z_rand = deq(x, z0=torch.randn(z_zero.shape, generator=gen).to(z_zero))
            both = ok_zero & deq.forward_result.converged  # only converged solves are fixed points
            dist = (z_rand - z_zero).norm(dim=1) / z_zero.norm(dim=1).clamp_min(1e-12)
            starts.append(
                RandomStart(
                    accuracy=(r.model.readout(z_rand).argmax(dim=1) == data.y_test).double().mean().item(),
                    inputs=int(len(dist)),
                    both_converged=int(both.sum()),
                    other_point=int((both & (dist > SAME_POINT * deq.tol)).sum()),
                    distance=float(dist[both].max()) if both.any() else 0.0,
                )
            )
    return StepMismatch(
        {k: tuple(v) for k, v in unrolled.items()},
        {k: tuple(v) for k, v in deq_acc.items()},
        {k: tuple(v) for k, v in deq_iters.items()},
        tuple(starts),
    )


@cached_study
def step_mismatch_study(config: CapstoneConfig) -> StepMismatch:
    """:func:`step_mismatch` on the trained models of :func:`capstone_study` (``config``)."""
    return step_mismatch(capstone_study(config), config)


@dataclass(frozen=True)
class DepthMemory:
    """One model at one depth in :func:`memory_vs_depth`: ``depth`` names the knob's setting ("8 blocks",
    "tol 0.001"); ``saved_bytes`` the bytes autograd saves for backward in one training step;
    ``work`` the evaluations of the depth block in that forward pass (blocks, NFE or iterations)."""

    depth: str
    saved_bytes: int
    work: float


@dataclass(frozen=True)
class PeerBytes:
    """One explicit peer of the DEQ in :func:`reduction_peers`: ``model`` ("ResNet" or "Unrolled") at
    ``depth`` blocks/steps with ``parameters`` parameters; ``saved_bytes`` saved for backward and
    ``peak_bytes`` the measured peak of one training step (None where the peak cannot be measured)."""

    model: str
    depth: int
    parameters: int
    saved_bytes: int
    peak_bytes: int | None


@dataclass(frozen=True)
class DialSolve:
    """One trained neural ODE (``seed``) on its whole test split at one test-time tolerance ``tol``
    (``rtol = atol``) in :func:`ode_tolerance_sweep`: ``accuracy`` (fraction) and ``nfe`` of one batched
    solve, ``nfe_per_input`` (one entry per test input, each solved on its own) and ``seconds`` (median
    time of the batched forward pass)."""

    seed: int
    tol: float
    accuracy: float
    nfe: float
    nfe_per_input: tuple[float, ...]
    seconds: float


@cached_study
def memory_vs_depth(config: CapstoneConfig, seed: int = 0) -> dict[str, tuple[DepthMemory, ...]]:
    """Bytes saved for backward in one training step (batch ``memory_batch``), each model at three
    depths: ResNet and unrolled with 1x, 2x, 3x the blocks/steps; the ODE at its tolerance, 100x and
    10,000x tighter (more solver steps), the DEQ at 1x, 10x, 100x tighter (more iterations). Untrained, seeded
    models: the bytes depend on the graph, not on the weights' values.

    Returns ``{model: (DepthMemory, DepthMemory, DepthMemory)}``, shallowest first.
    """
    data = load_digits(seed=seed, n_samples=config.n_samples)
    x, y = data.x_train[: config.memory_batch], data.y_train[: config.memory_batch]
    out = {}
    for name in MODELS:
        rows = []
        for label, kw in _depths(name, config):
            torch.manual_seed(seed)
            model = build_model(name, config, **kw)
            saved = saved_tensor_bytes(
                lambda: nn.functional.cross_entropy(model(x), y), exclude=tuple(model.parameters())
            )
            rows.append(DepthMemory(label, int(saved), forward_work(model)))
        out[name] = tuple(rows)
    return out


def _depths(name: str, config: CapstoneConfig) -> list[tuple[str, dict]]:
    if name == "ResNet":
        return [(f"{m * config.blocks} blocks", {"blocks": m * config.blocks}) for m in (1, 2, 3)]
    if name == "Unrolled":
        return [(f"{m * config.unrolled_steps} steps", {"steps": m * config.unrolled_steps}) for m in (1, 2, 3)]
    # float32 states: a DEQ's relative residual stalls near 1e-6, so its tolerances stop at 100x tighter
    tol, factors = (config.ode_tol, (1.0, 1e-2, 1e-4)) if name == "Neural ODE" else (config.deq_tol, (1.0, 1e-1, 1e-2))
    return [(f"tol {tol * f:g}", {"tol": tol * f}) for f in factors]


def matched_resnet_config(config: CapstoneConfig, blocks: int) -> CapstoneConfig:
    """The capstone's configuration with a ResNet of ``blocks`` blocks sharing the capstone ResNet's
    parameter budget: hidden width ``hidden * config.blocks / blocks`` (deeper and thinner)."""
    return replace(config, blocks=blocks, hidden=max(1, round(config.hidden * config.blocks / blocks)))


@cached_study
def reduction_peers(
    config: CapstoneConfig, depths: tuple[int, ...] = REDUCTION_DEPTHS, seed: int = 0
) -> dict[str, PeerBytes]:
    """Training memory of the explicit peers of the DEQ, one training step on ``memory_batch`` inputs:
    the ResNet at ``depths`` blocks (parameters matched, :func:`matched_resnet_config`) and the unrolled
    block at ``depths`` steps (its parameters are the DEQ's). Explicit graphs: the bytes do not depend on
    the weights, so untrained seeded models stand in for trained ones.

    Returns ``{"ResNet 8": PeerBytes, ...}``, keyed ``"<model> <depth>"``.
    """
    data = load_digits(seed=seed, n_samples=config.n_samples)
    x, y = data.x_train[: config.memory_batch], data.y_train[: config.memory_batch]
    peers = {}
    for name in ("ResNet", "Unrolled"):
        for d in depths:
            torch.manual_seed(seed)
            model = (
                build_model("ResNet", matched_resnet_config(config, d))
                if name == "ResNet"
                else build_model("Unrolled", config, steps=d)
            )
            saved, peak = _training_step_memory(model, x, y)
            peers[f"{name} {d}"] = PeerBytes(name, d, count_parameters(model), saved, peak)
    return peers


@cached_study
def ode_tolerance_sweep(
    config: CapstoneConfig, tolerances: tuple[float, ...] = DIAL_TOLERANCES, repeats: int = 5
) -> list[DialSolve]:
    """Each trained neural ODE of :func:`capstone_study` (one per seed) on its whole test split at each
    test-time tolerance ``rtol = atol``: accuracy and NFE of one batched solve (as deployed), the NFE of
    every input solved on its own (``per_sample``), and the time of the batched forward pass (median of
    ``repeats``, the tolerances interleaved so that drift hits all alike). No training.

    Returns one :class:`DialSolve` per seed and tolerance (seeds in order, tolerances as given within each).
    """
    # capstone_study trains when its result is not cached yet (this row run alone): not under no_grad
    return _dial_solves(capstone_study(config), config, tolerances, repeats)


@torch.no_grad()
def _dial_solves(runs, config: CapstoneConfig, tolerances: tuple[float, ...], repeats: int) -> list[DialSolve]:
    """:func:`ode_tolerance_sweep` on trained ``runs`` (no training, no graph)."""
    rows = []
    for r in runs:
        if r.name != "Neural ODE":
            continue
        model, core = r.model, r.model.core
        data = load_digits(seed=r.seed, n_samples=config.n_samples, device=model.embed.weight.device)
        z0 = model.embed(data.x_test)
        found = {}
        for tol in tolerances:
            sol = core.solve(z0, gradient="backprop", rtol=tol, atol=tol)
            acc = (model.readout(sol.ys[-1]).argmax(dim=1) == data.y_test).double().mean().item()
            nfe = float(sol.stats["nfe"])
            each = core.solve(z0, gradient="backprop", rtol=tol, atol=tol, per_sample=True).stats["nfe_per_sample"]
            found[tol] = (acc, nfe, tuple(float(v) for v in each.cpu()))
        times = {tol: [] for tol in tolerances}
        for _ in range(repeats):
            for tol in tolerances:
                start = time.perf_counter()
                model.readout(core.solve(model.embed(data.x_test), gradient="backprop", rtol=tol, atol=tol).ys[-1])
                times[tol].append(time.perf_counter() - start)
        for tol in tolerances:
            rows.append(DialSolve(r.seed, tol, *found[tol], seconds=statistics.median(times[tol])))
    return rows


MIN_SAMPLE_S = 0.02


@dataclass(frozen=True)
class Timings:
    """Interleaved timings of the trained models: per model, one median per seed (seconds) of inference on
    the whole test split (``inference_s``) and of one training step (``train_step_s``); ``n_test``: test
    inputs per seed."""

    seeds: tuple[int, ...]
    inference_s: dict[str, tuple[float, ...]]
    train_step_s: dict[str, tuple[float, ...]]
    n_test: tuple[int, ...]
    repeats: int

    def as_dict(self) -> dict:
        """For a row's ``details`` (JSON)."""
        return {
            "seeds": list(self.seeds),
            "inference_s": {k: list(v) for k, v in self.inference_s.items()},
            "train_step_s": {k: list(v) for k, v in self.train_step_s.items()},
            "n_test": list(self.n_test),
            "repeats": self.repeats,
        }


@cached_study
def timing_study(config: CapstoneConfig, repeats: int = 9) -> Timings:
    """Inference time (whole test split, no grad) and training-step time (forward + backward on one
    batch of ``batch_size``, no optimiser step) of the four trained models of each seed, measured in one
    run: the models interleaved in every repeat (drift and warm-up hit all alike), each figure the median
    of ``repeats`` after one untimed warm-up round; a fast call is repeated within a sample until the sample
    lasts :data:`MIN_SAMPLE_S`, so scheduler jitter does not dominate it.

    """
    runs = capstone_study(config)
    out = {
        "seeds": list(config.seeds),
        "inference_s": {n: [] for n in MODELS},
        "train_step_s": {n: [] for n in MODELS},
        "n_test": [],
        "repeats": repeats,
    }
    for seed in config.seeds:
        models = {r.name: r.model for r in runs if r.seed == seed}
        data = load_digits(seed=seed, n_samples=config.n_samples, device=models["ResNet"].embed.weight.device)
        xb, yb = data.x_train[: config.batch_size], data.y_train[: config.batch_size]
        out["n_test"].append(len(data.y_test))

        def infer(model):
            with torch.no_grad():
                model(data.x_test)

        def train_step(model):
            nn.functional.cross_entropy(model(xb), yb).backward()
            model.zero_grad(set_to_none=True)

        samples = {(n, what): [] for n in MODELS for what in ("inference", "train")}
        calls = {}  # calls per sample: a sample of a millisecond call would be all scheduler jitter
        for rep in range(repeats + 1):
            for name in MODELS:
                for what, fn in (("inference", infer), ("train", train_step)):
                    n = calls.get((name, what), 1)
                    start = time.perf_counter()
                    for _ in range(n):
                        fn(models[name])
                    took = (time.perf_counter() - start) / n
                    if rep:
                        samples[name, what].append(took)
                    else:  # the first round warms up and sets the calls per sample (>= MIN_SAMPLE_S each)
                        calls[name, what] = max(1, math.ceil(MIN_SAMPLE_S / max(took, 1e-9)))
        for name in MODELS:
            out["inference_s"][name].append(statistics.median(samples[name, "inference"]))
            out["train_step_s"][name].append(statistics.median(samples[name, "train"]))
    return Timings(
        tuple(config.seeds),
        {n: tuple(v) for n, v in out["inference_s"].items()},
        {n: tuple(v) for n, v in out["train_step_s"].items()},
        tuple(out["n_test"]),
        repeats,
    )
