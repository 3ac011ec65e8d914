"""Lesson 5's learning curve: mortality AUC against the number of training patients of set A.

ODE-RNN, Latent ODE (ODE-RNN encoder, classification), GRU-D and the summary-statistics
regression, trained at the settings of :mod:`nodecourse.models._physionet_settings` on N patients
of set A, scored on held-out patients of set A.

How the patients are drawn, per seed: set A is split (stratified by outcome, seeded) into a
training pool of ``max(sizes)`` patients and the held-out rest; the training set of size N is
the pool's first N patients in a seeded order, so the sets are nested and every N of one seed is
scored on the *same* held-out patients (the curve's steps are differences in data, not in test
sets). Normalisation statistics come from each training set alone.

Why 3,200: the published classification code trains on 80 % of set A, 3,200 patients (see
``PHYSIONET_PUBLISHED.source("train_patients")``), so the curve's last point is the published training size.

Full run (not run on the course's shared 2-core machine; about 4 models x 3 sizes x 3 seeds x 100
epochs at minute quantisation)::

    OMP_NUM_THREADS=1 python -m nodecourse.lessons.lesson05.curve --full --out curve.json

At the course's settings (hourly grid, 20 epochs; lesson 5's full mode, :data:`COURSE_CURVE`), resumable::

    OMP_NUM_THREADS=1 python -m nodecourse.lessons.lesson05.curve --full --settings course --cache curve-cache

``--device cuda`` (or ``mps``; default ``cpu``) trains each fit there: its model and batches move
to that device, and with ``--executor ray`` each task asks Ray for one GPU (``num_gpus=1``) beside
its CPU. A device this machine (or, with ``--address``, the Ray cluster) lacks is refused before any
fit starts. The AUCs of a cpu run are those of a run without the flag.

``--cache DIR`` keeps each finished fit (:class:`CurveCache`): a rerun after an interruption, or
after a fit failed, fits only what is missing. A fit that fails is named by model, size and seed
once the others have finished (:class:`CurveFitsFailed`).

Quick mode (:data:`QUICK_CURVE`) keeps the published sizes, optimiser and grid and shrinks the
patients, sizes, seeds and epochs so that it runs in CI.

Why this module is long: it is one study that runs on its own (``python -m
nodecourse.lessons.lesson05.curve``), and what only it needs lives with it: the nested draws, the per-fit
cache, the device check, the Ray executor and the command line.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace

import numpy as np

# What the lesson's package re-exports (lazily, by these names: see its ``__init__``).
__all__ = [
    "COURSE_CURVE",
    "FULL_CURVE",
    "LESSON_QUICK_CURVE",
    "QUICK_CURVE",
    "CurveCache",
    "CurveConfig",
    "CurveFitsFailed",
    "learning_curve",
]

CURVE_MODELS = ("odernn", "latent-ode", "gru-d", "summary-logreg")
DEVICES = ("cpu", "cuda", "mps")
"""Where a fit of the curve can train (``CurveConfig.device``, ``--device``)."""


@dataclass(frozen=True)
class CurveConfig:
    """One learning-curve study. ``n_patients``: patients of set A used (None: all 4,000);
    ``epochs``: None for the settings' own (100 published); ``device``: where each fit trains, one
    of :data:`DEVICES` (its AUC can differ from a cpu fit's in the last digits)."""

    sizes: tuple[int, ...] = (1000, 2000, 3200)
    seeds: tuple[int, ...] = (0, 1, 2)
    models: tuple[str, ...] = CURVE_MODELS
    settings: str = "published"
    epochs: int | None = None
    n_patients: int | None = None
    device: str = "cpu"

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
        if self.device not in DEVICES:
            raise ValueError(f"device={self.device!r}: choose one of {DEVICES} (--device)")


FULL_CURVE = CurveConfig()
QUICK_CURVE = CurveConfig(sizes=(30, 60), seeds=(0, 1), n_patients=120, epochs=1)
"""CI: 120 patients of set A (60 held out per seed), sizes 30 and 60, two seeds, one epoch at the
published sizes, optimiser and minute grid. Its AUCs are noise at that size; it checks the
machinery and draws the same plot."""
COURSE_CURVE = CurveConfig(settings="course")
"""Lesson 5's full mode: the published sizes 1,000 / 2,000 / 3,200 and three seeds at the course's
settings (hourly grid, 20 epochs, the weights of the last epoch), the settings lesson 5's AUC study
trains with: whether more patients close the gap to the published levels at the scale the course runs.
Cost, one thread, seed 0 on the course's 2-core machine: CPU seconds at 1,000 patients ODE-RNN 15.5,
latent ODE 21.4, GRU-D 9.9, the regression 0.1; ODE-RNN at 3,200 patients 50.3 (about linear in the
patients). The 36 fits: about 47 s x (1,000 + 2,000 + 3,200) / 1,000 x 3 seeds, some 15 minutes of one
core (its wall clock runs several times that on a machine shared with other jobs)."""
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


@dataclass(frozen=True)
class CurveTask:
    """One fit of the curve: ``model`` trained on the first ``n_train`` patients of ``seed``'s pool."""

    seed: int
    n_train: int
    model: str


def curve_tasks(config: CurveConfig) -> tuple[CurveTask, ...]:
    """Every fit of ``config``, in the order a serial run makes them (seed, then size, then model)."""
    return tuple(CurveTask(seed, n, m) for seed in config.seeds for n in config.sizes for m in config.models)


def curve_settings(config: CurveConfig):
    """The :class:`~nodecourse.models.PhysioNetSettings` ``config`` trains with."""
    from nodecourse.models import physionet_settings

    settings = physionet_settings(config.settings)
    return settings if config.epochs is None else settings.quick(epochs=config.epochs)


def load_curve_data(config: CurveConfig, progress: bool = False):
    """Set A, raw, on the grid of ``config``'s settings (``n_patients`` of it, drawn with seed 0)."""
    from nodecourse.data import physionet

    hours = curve_settings(config).quantization_hours
    data = physionet.load("set-a", quantization=hours, progress=progress, verbose=progress)
    return data if config.n_patients is None else data.sample(config.n_patients, seed=0)


class DeviceUnavailable(ValueError):
    """``--device`` names a device this machine (or the Ray cluster) does not have; raised before any fit."""


def check_device(device: str) -> None:
    """Raise :class:`DeviceUnavailable`, naming ``--device`` and the fix, when torch cannot use ``device``
    (one of :data:`DEVICES`) on this machine (:func:`nodecourse.config.available_devices`)."""
    from nodecourse.config import available_devices

    if device not in available_devices():
        probe = {"cuda": "torch.cuda.is_available()", "mps": "torch.backends.mps.is_available()"}[device]
        raise DeviceUnavailable(
            f"--device {device}: {probe} is False here; drop --device (cpu) or run on a machine with "
            f"{'a GPU' if device == 'cuda' else 'Apple silicon'}"
        )


def fit_point(config: CurveConfig, task: CurveTask, data) -> CurvePoint:
    """Train ``task.model`` on its training set of the raw ``data``, on ``config.device`` (the model
    follows its data there); its AUC on the seed's held-out patients."""
    from nodecourse.data import physionet
    from nodecourse.models.latent import fit_mortality

    pool, held = draw_split(len(data), data.labels.numpy(), max(config.sizes), task.seed)
    raw_train, raw_eval = data.subset(np.sort(pool[: task.n_train])), data.subset(held)
    norm = physionet.Normalizer.fit(raw_train)
    _, r = fit_mortality(
        task.model,
        norm.transform(raw_train).to(config.device),
        norm.transform(raw_eval).to(config.device),
        seed=task.seed,
        settings=curve_settings(config),
        progress=False,
    )
    return CurvePoint(task.model, task.n_train, task.seed, r.auc, r.n_eval, r.cpu_seconds)


class CurveFitsFailed(RuntimeError):
    """Some fits of a curve raised; the others finished (and, with a cache, were saved).

    ``failures``: ((task, exception), ...) in task order; ``points``: the fits that finished."""

    def __init__(self, failures, points, cache_folder):
        self.failures = tuple(failures)
        self.points = tuple(points)
        causes = [(t, getattr(e, "cause", None) or e) for t, e in self.failures]  # a Ray task's: what it raised
        named = "; ".join(
            f"{t.model} on {t.n_train} patients, seed {t.seed}: {type(e).__name__}: {e}" for t, e in causes
        )
        rerun = (
            f"they are cached in {cache_folder}: rerun with the same cache to fit only the failed ones"
            if cache_folder
            else "give a cache folder (cache=, --cache DIR) so that a rerun fits only the failed ones"
        )
        super().__init__(
            f"{len(self.failures)} of {len(self.failures) + len(self.points)} fits failed ({named}); "
            f"the other {len(self.points)} finished: {rerun}"
        )


def data_fingerprint(data) -> str:
    """Which patients ``data`` holds, on which grid: its source, size and grid, and a hash of its
    tensors (a cached fit of one set is never reused for another; hashed in place, without a copy:
    about 0.1 s on the hourly grid, seconds on the minute grid)."""
    import hashlib

    digest = hashlib.sha256()
    for tensor in (data.record_ids, data.labels, data.values, data.mask, data.static, data.static_mask):
        digest.update(memoryview(tensor.contiguous().numpy()).cast("B"))
    return f"{data.report.source}-{len(data)}-{data.quantization!r}-{digest.hexdigest()[:12]}"


class CurveCache:
    """Finished fits of learning curves, one JSON file per (model, training size, seed) of a study.

    A fit's file name holds its model, size and seed and a digest of what else decides its AUC: the
    settings, epochs, patients of set A used, the pool size (the largest size: it fixes the split),
    the data (:func:`data_fingerprint`; ``"per-task"`` when Ray tasks load set A themselves) and the
    device;
    the folder and the code version are those of the ledger's :class:`~nodecourse.claims.RowCache`
    (``nodecourse claims --cache``), so a change to any file of the package makes every fit stale.
    A fit that raised is never saved.
    """

    def __init__(self, folder, version: str | None = None):
        from nodecourse.claims import RowCache

        self.rows = RowCache(folder, version)

    @property
    def folder(self):
        return self.rows.folder

    def path(self, config: CurveConfig, task: CurveTask, data_key: str):
        import hashlib

        study = {
            "settings": config.settings,
            "epochs": curve_settings(config).epochs,
            "n_patients": config.n_patients,
            "pool": max(config.sizes),
            "data": data_key,
            "device": config.device,
        }
        digest = hashlib.sha256(json.dumps(study, sort_keys=True).encode()).hexdigest()[:12]
        return self.rows.file(f"curve-{task.model}-n{task.n_train}-seed{task.seed}-{digest}")

    def load(self, config: CurveConfig, task: CurveTask, data_key: str) -> tuple[CurvePoint, str, float] | None:
        """The cached (point, data source, grid hours) of ``task``, or None."""
        saved = self.rows.read(self.path(config, task, data_key))
        try:
            point = CurvePoint(**saved["point"])
            if (point.model, point.n_train, point.seed) != (task.model, task.n_train, task.seed):
                return None
            return point, str(saved["source"]), float(saved["quantization_hours"])
        except (KeyError, TypeError):  # absent or damaged: fit it again
            return None

    def save(self, config: CurveConfig, task: CurveTask, data_key: str, out: tuple[CurvePoint, str, float]) -> None:
        point, source, hours = out
        data = {"point": asdict(point), "source": source, "quantization_hours": hours}
        data["code_version"] = self.rows.version
        self.rows.write(self.path(config, task, data_key), data)


def _point_task(config: CurveConfig, task: CurveTask, data) -> tuple[CurvePoint, str, float]:
    """One fit in a Ray worker: the point, and the data's source and grid (the driver never loads set A)."""
    from nodecourse.claims import limit_task_threads

    limit_task_threads()
    if data is None:
        data = load_curve_data(config)
    return fit_point(config, task, data), data.report.source, data.quantization


def learning_curve(
    config: CurveConfig = QUICK_CURVE,
    *,
    data=None,
    progress: bool = True,
    executor: str = "serial",
    address: str | None = None,
    workers: int | None = None,
    cache=None,
) -> CurveResult:
    """Train every model of ``config`` at every size and seed; see the module docstring.

    ``data``: a raw (not normalised) :class:`~nodecourse.data.physionet.PhysioNetSet`; default: set A
    loaded at the settings' quantisation (``n_patients`` of it, seeded).
    ``executor="ray"`` runs each fit (:func:`curve_tasks`) as one Ray task of one CPU (and one GPU
    when ``config.device`` is ``"cuda"``), on a local runtime of ``workers`` CPUs or on the cluster at
    ``address`` (as ``nodecourse claims --executor ray``). ``config.device`` is checked before any fit,
    on this machine (:func:`check_device`) or, with an ``address``, in the cluster's resources:
    :class:`DeviceUnavailable` when it lacks it. Without ``data`` each task loads set A itself on its
    node (at the published minute grid the set is about 3.4 GB in memory: the driver never holds it);
    with ``data`` it is shipped once.
    ``cache``: a folder (or :class:`CurveCache`) of finished fits: a fit found there is not run
    again, and each fit is saved as it finishes, so a rerun after an interruption resumes.
    The points are those of a serial run, in the same order. A fit that raises does not stop the
    others: once they finish, :class:`CurveFitsFailed` names each failed (model, size, seed).
    """
    from tqdm.auto import tqdm

    if executor not in ("serial", "ray"):
        raise ValueError(f"executor={executor!r}: choose 'serial' or 'ray'")
    if executor == "serial" or address is None:
        check_device(config.device)
    if cache is not None and not isinstance(cache, CurveCache):
        cache = CurveCache(cache)
    tasks = curve_tasks(config)
    start = time.perf_counter()
    if executor == "serial" and data is None:
        data = load_curve_data(config, progress)
    data_key = "per-task" if data is None else data_fingerprint(data)
    out: list = [None] * len(tasks)
    if cache is not None:
        out = [cache.load(config, task, data_key) for task in tasks]
    todo = [i for i, o in enumerate(out) if o is None]
    skipped = len(tasks) - len(todo)
    bar = tqdm(total=len(tasks), initial=skipped, desc="learning curve", unit="fit", disable=not progress)

    def finished(i: int, result) -> None:
        out[i] = result
        if cache is not None and not isinstance(result, BaseException):
            cache.save(config, tasks[i], data_key, result)
        bar.update(1)

    if executor == "ray":
        _on_ray(config, [tasks[i] for i in todo], data, bar, address, workers, lambda j, r: finished(todo[j], r))
    else:
        for i in todo:
            task = tasks[i]
            bar.set_postfix(model=task.model, n=task.n_train, seed=task.seed)
            try:
                result = (fit_point(config, task, data), data.report.source, data.quantization)
            except Exception as exc:  # noqa: BLE001 - named in CurveFitsFailed once the others finish
                result = exc
            finished(i, result)
    bar.close()
    failures = [(t, o) for t, o in zip(tasks, out) if isinstance(o, BaseException)]
    done = [o for o in out if not isinstance(o, BaseException)]
    if failures:
        raise CurveFitsFailed(failures, [point for point, _, _ in done], cache.folder if cache else None)
    sources = sorted({source for _, source, _ in done})
    if len(sources) != 1 or len({hours for _, _, hours in done}) != 1:
        raise RuntimeError(
            f"the fits read different data ({sources}): give every node the same set A, and a cache folder "
            "of one data set"
        )
    machine = f"{platform.machine()}, {platform.system()}, torch threads {_threads()}"
    if executor == "ray":
        machine = f"Ray ({address or 'a local runtime'}), one CPU{' and one GPU' * _gpus(config)} a fit"
    if config.device != "cpu":
        machine += f", fits on {config.device}"
    seconds = time.perf_counter() - start
    return CurveResult(config, tuple(point for point, _, _ in done), sources[0], done[0][2], machine, seconds)


def _on_ray(config, tasks, data, bar, address, workers, finished) -> None:
    """Each of ``tasks`` as a Ray task; ``finished(j, (point, source, hours) or the exception)`` as each
    ends (so that the cache holds every fit finished before an interruption)."""
    if not tasks:
        return
    from nodecourse.claims import ray_runtime, run_tasks

    index = {(t.model, t.n_train, t.seed): j for j, t in enumerate(tasks)}

    def done(result) -> None:
        if not isinstance(result, BaseException):
            point = result[0]
            finished(index[(point.model, point.n_train, point.seed)], result)

    def failed(j: int, exc: BaseException) -> BaseException:
        t = tasks[j]
        exc.add_note(f"while fitting {t.model} on {t.n_train} patients, seed {t.seed}, as a Ray task")
        finished(j, exc)
        return exc

    with ray_runtime(address, workers) as ray:
        if _gpus(config) and ray.cluster_resources().get("GPU", 0) < 1:
            raise DeviceUnavailable(
                f"--device {config.device}: the Ray cluster ({address or 'a local runtime'}) has no GPU in "
                "ray.cluster_resources(); drop --device or start its nodes with GPUs (ray start --num-gpus)"
            )
        shared = None if data is None else ray.put(data)
        calls = [(config, task, shared) for task in tasks]
        run_tasks(ray, _point_task, calls, workers=workers, gpus=_gpus(config), bar=bar, done=done, failed=failed)


def _gpus(config: CurveConfig) -> int:
    """The GPUs one Ray task of ``config`` asks for: one on cuda, none on cpu (or mps, which Ray does not count)."""
    return 1 if config.device == "cuda" else 0


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Lesson 5's learning curve on PhysioNet set A.")
    parser.add_argument("--full", action="store_true", help="sizes 1,000/2,000/3,200, 3 seeds, 100 epochs")
    parser.add_argument("--settings", choices=("published", "course"), default=None, help="override the settings")
    parser.add_argument("--epochs", type=int, default=None, help="override the epochs (e.g. 1 to time one fit)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="override the seeds")
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="override the training-set sizes")
    parser.add_argument("--patients", type=int, default=None, help="override the patients of set A used")
    parser.add_argument("--executor", choices=("serial", "ray"), default="serial", help="run each fit as a Ray task")
    parser.add_argument("--address", default=None, help="the Ray cluster to join (default: a local runtime)")
    parser.add_argument("--workers", type=int, default=None, help="Ray: CPUs of the local runtime, fits at once")
    parser.add_argument(
        "--device",
        choices=DEVICES,
        default="cpu",
        help="where each fit trains (default cpu); with --executor ray, cuda asks one GPU per task; "
        "refused before any fit if this machine (or the --address cluster) lacks it",
    )
    parser.add_argument("--out", default=None, help="write the result as JSON here")
    parser.add_argument(
        "--cache", default=None, metavar="DIR", help="keep each finished fit here; a rerun skips the fits found there"
    )
    args = parser.parse_args(argv)
    config = FULL_CURVE if args.full else QUICK_CURVE
    overrides = {
        "settings": args.settings,
        "epochs": args.epochs,
        "seeds": tuple(args.seeds or ()) or None,
        "sizes": tuple(args.sizes or ()) or None,
        "n_patients": args.patients,
        "device": args.device,
    }
    config = replace(config, **{k: v for k, v in overrides.items() if v is not None})
    try:
        result = learning_curve(
            config, executor=args.executor, address=args.address, workers=args.workers, cache=args.cache
        )
    except DeviceUnavailable as exc:  # before any fit: a usage error
        parser.error(str(exc))
    except CurveFitsFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(result.to_markdown())
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result.to_json(), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
