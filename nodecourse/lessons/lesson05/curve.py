"""Lesson 5's learning curve: mortality AUC against the number of training patients of set A.

ODE-RNN, Latent ODE (ODE-RNN encoder, classification), GRU-D and the summary-statistics
regression, trained at the settings of :mod:`nodecourse.models.physionet_settings` on N patients
of set A, scored on held-out patients of set A.

How the patients are drawn, per seed: set A is split (stratified by outcome, seeded) into a
training pool of ``max(sizes)`` patients and the held-out rest; the training set of size N is
the pool's first N patients in a seeded order, so the sets are nested and every N of one seed is
scored on the *same* held-out patients (the curve's steps are differences in data, not in test
sets). Normalisation statistics come from each training set alone.

Why 3,200: the published classification code trains on 80 % of set A, 3,200 patients (see
``PUBLISHED.source("train_patients")``), so the curve's last point is the published training size.

Full run (not run on the course's shared 2-core machine; about 4 models x 3 sizes x 3 seeds x 100
epochs at minute quantisation)::

    OMP_NUM_THREADS=1 python -m nodecourse.lessons.lesson05.curve --full --out curve.json

Quick mode (:data:`QUICK_CURVE`) keeps the published sizes, optimiser and grid and shrinks the
patients, sizes, seeds and epochs so that it runs in CI.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

CURVE_MODELS = ("odernn", "latent-ode", "gru-d", "summary-logreg")


@dataclass(frozen=True)
class CurveConfig:
    """One learning-curve study. ``n_patients``: patients of set A used (None: all 4,000);
    ``epochs``: None for the settings' own (100 published)."""

    sizes: tuple[int, ...] = (1000, 2000, 3200)
    seeds: tuple[int, ...] = (0, 1, 2)
    models: tuple[str, ...] = CURVE_MODELS
    settings: str = "published"
    epochs: int | None = None
    n_patients: int | None = None

    def __post_init__(self):
        from nodecourse.models.latent import MODELS

        if not self.sizes or any(isinstance(n, bool) or not isinstance(n, int) or n < 2 for n in self.sizes):
            raise ValueError(f"sizes={self.sizes!r}: give training-set sizes, integers >= 2")
        if list(self.sizes) != sorted(set(self.sizes)):
            raise ValueError(f"sizes={self.sizes!r}: give them increasing, without repeats")
        unknown = [m for m in self.models if m not in MODELS]
        if unknown:
            raise ValueError(f"models {unknown} are not models; choose from {MODELS}")
        if not self.seeds:
            raise ValueError("seeds=(): give at least one seed")


FULL_CURVE = CurveConfig()
QUICK_CURVE = CurveConfig(sizes=(30, 60), seeds=(0, 1), n_patients=120, epochs=1)
"""CI: 120 patients of set A (60 held out per seed), sizes 30 and 60, two seeds, one epoch at the
published sizes, optimiser and minute grid. Its AUCs are noise at that size; it checks the
machinery and draws the same plot."""
LESSON_QUICK_CURVE = CurveConfig(sizes=(100, 200, 400), seeds=(0, 1, 2), settings="course", epochs=3, n_patients=600)
"""The lesson's quick-mode curve: 600 patients of set A (200 held out per seed), sizes 100, 200 and
400, three seeds, up to three epochs at the course's settings (hourly grid): the minute grid of the
published settings costs more than the lesson's quick-mode budget. The same plot as the full curve,
at quick-mode sizes; its AUCs say how the machinery behaves, not where the benchmark's curve lies."""


@dataclass(frozen=True)
class CurvePoint:
    """One trained model: its AUC on the seed's held-out patients."""

    model: str
    n_train: int
    seed: int
    auc: float
    n_eval: int
    cpu_seconds: float


@dataclass(frozen=True)
class CurveSummary:
    """Mean AUC over seeds at one size, with a 95 % t-interval (None with one seed)."""

    model: str
    n_train: int
    n_seeds: int
    mean: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class CurveResult:
    """Every point of a study, with where and how long it ran."""

    config: CurveConfig
    points: tuple[CurvePoint, ...]
    data_source: str
    quantization_hours: float
    machine: str
    seconds: float

    def summary(self) -> tuple[CurveSummary, ...]:
        out = []
        for model in self.config.models:
            for n in self.config.sizes:
                aucs = [p.auc for p in self.points if p.model == model and p.n_train == n]
                if not aucs:
                    continue
                mean = statistics.fmean(aucs)
                low = high = None
                if len(aucs) > 1:
                    from scipy import stats

                    half = stats.t.ppf(0.975, len(aucs) - 1) * statistics.stdev(aucs) / math.sqrt(len(aucs))
                    low, high = mean - half, mean + half
                out.append(CurveSummary(model, n, len(aucs), mean, low, high))
        return tuple(out)

    def to_markdown(self) -> str:
        rows = ["| model | training patients | seeds | mean AUC | 95 % interval |", "|---|---:|---:|---:|---|"]
        for s in self.summary():
            interval = "—" if s.low is None else f"{s.low:.3f} to {s.high:.3f}"
            rows.append(f"| {s.model} | {s.n_train:,} | {s.n_seeds} | {s.mean:.3f} | {interval} |")
        head = (
            f"Learning curve ({self.config.settings} settings, {self.data_source} data, grid "
            f"{self.quantization_hours * 60:g} min), {self.seconds:.0f} s on {self.machine}"
        )
        return head + "\n\n" + "\n".join(rows)

    def to_json(self) -> dict:
        return {
            "config": asdict(self.config),
            "points": [asdict(p) for p in self.points],
            "data_source": self.data_source,
            "quantization_hours": self.quantization_hours,
            "machine": self.machine,
            "seconds": self.seconds,
        }


def draw_split(n_total: int, labels: np.ndarray, pool_size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(pool, held_out) patient indices: a stratified, seeded split; the pool in a seeded order."""
    from sklearn.model_selection import train_test_split

    if pool_size >= n_total:
        raise ValueError(
            f"sizes up to {pool_size} leave no held-out patients of {n_total}: lower the largest "
            f"size or use more patients (n_patients)"
        )
    idx = np.arange(n_total)
    pool, held = train_test_split(idx, train_size=pool_size, random_state=seed, stratify=labels)
    return np.random.default_rng(seed).permutation(pool), np.sort(held)


def learning_curve(config: CurveConfig = QUICK_CURVE, *, data=None, progress: bool = True) -> CurveResult:
    """Train every model of ``config`` at every size and seed; see the module docstring.

    ``data``: a raw (not normalised) :class:`~nodecourse.data.physionet.PhysioNetSet`; default: set A
    loaded at the settings' quantisation (``n_patients`` of it, seeded).
    """
    from tqdm.auto import tqdm

    from nodecourse.data import physionet
    from nodecourse.models.latent import fit
    from nodecourse.models.physionet_settings import by_name

    settings = by_name(config.settings)
    if config.epochs is not None:
        settings = settings.quick(epochs=config.epochs)
    start = time.perf_counter()
    if data is None:
        data = physionet.load("set-a", quantization=settings.quantization_hours, progress=progress, verbose=progress)
        if config.n_patients is not None:
            data = data.sample(config.n_patients, seed=0)
    points = []
    jobs = [(seed, n, m) for seed in config.seeds for n in config.sizes for m in config.models]
    bar = tqdm(jobs, desc="learning curve", unit="fit", disable=not progress)
    split = {}
    for seed, n, model in bar:
        if seed not in split:
            split[seed] = draw_split(len(data), data.labels.numpy(), max(config.sizes), seed)
        pool, held = split[seed]
        raw_train, raw_eval = data.subset(np.sort(pool[:n])), data.subset(held)
        norm = physionet.Normalizer.fit(raw_train)
        bar.set_postfix(model=model, n=n, seed=seed)
        _, r = fit(
            model, norm.transform(raw_train), norm.transform(raw_eval), seed=seed, settings=settings, progress=False
        )
        points.append(CurvePoint(model, n, seed, r.auc, r.n_eval, r.cpu_seconds))
    machine = f"{platform.machine()}, {platform.system()}, torch threads {_threads()}"
    return CurveResult(
        config, tuple(points), data.report.source, data.quantization, machine, time.perf_counter() - start
    )


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Lesson 5's learning curve on PhysioNet set A.")
    parser.add_argument("--full", action="store_true", help="sizes 1,000/2,000/3,200, 3 seeds, 100 epochs")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="override the seeds")
    parser.add_argument("--out", default=None, help="write the result as JSON here")
    args = parser.parse_args(argv)
    config = FULL_CURVE if args.full else QUICK_CURVE
    if args.seeds:
        config = replace(config, seeds=tuple(args.seeds))
    result = learning_curve(config)
    print(result.to_markdown())
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result.to_json(), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
