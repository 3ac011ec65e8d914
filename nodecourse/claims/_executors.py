"""Where the ledger's rows run: one after another in this process (``"serial"``) or as Ray tasks
(``"ray"``), and the cache that lets a rerun skip the rows already finished.

The unit of work is one row, never one (row, seed): a row's ``measure`` runs all its seeds and
judges them together (an interval over the seeds against the threshold), so a seed alone has no
verdict to return. Splitting a row's seeds across workers would move that judgement out of
``measure``; splitting by row keeps every verdict exactly the row's own, and a distributed run
returns what a serial run returns (timings aside).

Ray is optional (the ``cluster`` extra, ``pip install 'nodecourse[cluster]'``) and imported only
when ``executor="ray"`` runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from nodecourse.claims._registry import ClaimResult, ClaimSpec, check_unrun_scale
from nodecourse.claims._verdict import ClaimVerdict, Measurement

EXECUTORS = ("serial", "ray")
"""The values ``run_claims(executor=...)`` and ``nodecourse claims --executor`` accept."""

ROW_CPUS = 1
"""The CPUs a Ray task asks for (``ray.remote(num_cpus=ROW_CPUS)``); every row asks the same for
now. A row's own need (a GPU, more CPUs) could later come from its :class:`ClaimSpec`."""

_OBJECT_STORE_BYTES = 128 * 2**20
"""A local runtime's object store: a row's result is a few kilobytes, and the default (30 % of
memory) would take a shared machine's memory for nothing."""


def run_row(spec: ClaimSpec, quick: bool, keep_going: bool) -> ClaimResult:
    """Run one row's ``measure(quick)`` and check what it returned; the result, with its time.

    With ``keep_going`` an exception becomes verdict :attr:`ClaimVerdict.ERROR` (its type and message
    in ``measured``, the traceback on stderr); without it the exception propagates.
    """
    start = time.perf_counter()
    try:
        m = spec.measure(quick)
        if not isinstance(m.verdict, ClaimVerdict) or m.verdict is ClaimVerdict.ERROR:
            raise TypeError(
                f"claim {spec.id!r} returned verdict {m.verdict!r}; expected one of "
                f"{[v for v in ClaimVerdict if v is not ClaimVerdict.ERROR]}"
            )
        check_unrun_scale(spec, m)
    except Exception as exc:  # noqa: BLE001 - recorded, not swallowed: the verdict says error
        if not keep_going:
            raise
        import traceback

        traceback.print_exc(file=sys.stderr)
        m = error_measurement(exc)
    return _result(spec, m, time.perf_counter() - start)


def error_measurement(exc: BaseException, where: str = "the row") -> Measurement:
    """The :attr:`ClaimVerdict.ERROR` measurement of a row that raised ``exc``."""
    return Measurement(
        f"{where} raised {type(exc).__name__}: {exc}", ClaimVerdict.ERROR, {"exception": type(exc).__name__}
    )


def _result(spec: ClaimSpec, m: Measurement, seconds: float) -> ClaimResult:
    return ClaimResult(
        spec.id,
        spec.claim,
        spec.source,
        spec.published,
        m.measured,
        m.verdict,
        seconds,
        m.details,
        spec.threshold,
        m.seeds,
        m.unit,
    )


# ---------------------------------------------------------------------------
# the cache of finished rows
# ---------------------------------------------------------------------------


def code_version() -> str:
    """``nodecourse.__version__`` and a hash of every file of the ``nodecourse`` package.

    The whole package, not only the row's lesson: a row measures the library's solvers, models and
    statistics as much as its own lesson's code, so a change anywhere may change its result. A
    change to any file makes every cached row stale; rerunning a row for nothing costs minutes,
    reusing a stale result would report a verdict that nothing measured.
    """
    import nodecourse

    root = Path(nodecourse.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return f"{nodecourse.__version__}-{digest.hexdigest()[:16]}"


class RowCache:
    """Finished rows as JSON files in ``folder``, one per (row id, quick or full, code version).

    A row that ended in :attr:`ClaimVerdict.ERROR` is never saved: a rerun tries it again. A
    loaded row's ``details`` are the JSON data ``nodecourse claims --json`` prints (tuples come back
    as lists, NaN as None), so every report of it reads as the first run's.
    ``version`` defaults to :func:`code_version`.
    """

    def __init__(self, folder: str | os.PathLike, version: str | None = None):
        self.folder = Path(folder)
        self.version = code_version() if version is None else version

    def path(self, row_id: str, quick: bool) -> Path:
        """The file of ``row_id``'s result in quick or full mode, at this code version."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", row_id)
        if safe != row_id:  # two ids that differ only in unsafe characters keep apart
            safe += "-" + hashlib.sha256(row_id.encode()).hexdigest()[:8]
        return self.file(f"{safe}.{'quick' if quick else 'full'}")

    def file(self, name: str) -> Path:
        """The file of the entry ``name`` (a file-name-safe stem) at this code version; other studies
        (lesson 5's learning curve) keep their own entries in the same kind of folder."""
        return self.folder / f"{name}.{self.version}.json"

    @staticmethod
    def read(path: Path) -> dict | None:
        """The JSON data saved at ``path``, or None when there is none (or it cannot be read)."""
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write(self, path: Path, data: dict) -> None:
        """Write ``data`` to ``path`` as JSON (atomically: a run stopped mid-write leaves no half file)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    def load(self, spec: ClaimSpec, quick: bool) -> ClaimResult | None:
        """The saved result of ``spec``'s row, or None when there is none (or it cannot be read)."""
        data = self.read(self.path(spec.id, quick))
        try:
            verdict = ClaimVerdict(data["verdict"])
            m = Measurement(data["measured"], verdict, data["details"], data["seeds"], data["unit"])
            return _result(spec, m, float(data["seconds"]))
        except (ValueError, KeyError, TypeError):  # absent or damaged: run the row again
            return None

    def save(self, result: ClaimResult, quick: bool) -> None:
        """Write ``result`` (atomically: a run stopped mid-write leaves no half file)."""
        if result.verdict is ClaimVerdict.ERROR:
            return
        from nodecourse.measure import json_safe

        data = json_safe(result.as_dict())
        data["seconds"] = result.seconds  # unrounded: the reports add the rows' own times
        data["code_version"] = self.version
        self.write(self.path(result.id, quick), data)


# ---------------------------------------------------------------------------
# executors
# ---------------------------------------------------------------------------

Done = Callable[[ClaimResult], None]
"""Called with each row's result as it finishes (the cache, the progress bar)."""


def run_serial(specs: Sequence[ClaimSpec], quick: bool, keep_going: bool, done: Done, bar=None) -> list[ClaimResult]:
    """Run ``specs`` one after another in this process; results in the order of ``specs``."""
    results = []
    for spec in specs:
        if bar is not None:
            # Name the row running: rows take seconds to minutes, a bare counter says nothing.
            bar.set_description(f"claims: {spec.id}")
        results.append(run_row(spec, quick, keep_going))
        done(results[-1])
    return results


def limit_task_threads(cpus: int = ROW_CPUS) -> None:
    """In a Ray worker: torch's CPU threads at the course's count, never more than the task's ``cpus``.

    Two tasks on two cores must not each start a thread per core.
    """
    from nodecourse.config import use_course_threads

    if use_course_threads() > cpus:
        import torch

        torch.set_num_threads(cpus)


def _row_task(spec: ClaimSpec, quick: bool, keep_going: bool) -> ClaimResult:
    """One row in a Ray worker, with the course's CPU threads (at most the task's CPUs)."""
    from contextlib import redirect_stdout

    limit_task_threads(ROW_CPUS)
    with redirect_stdout(sys.stderr):  # what a row prints is a log line, never part of a report on stdout
        return run_row(spec, quick, keep_going)


def run_ray(
    specs: Sequence[ClaimSpec],
    quick: bool,
    keep_going: bool,
    done: Done,
    bar=None,
    *,
    address: str | None = None,
    workers: int | None = None,
) -> list[ClaimResult]:
    """Run each of ``specs`` as one Ray task; results in the order of ``specs``.

    ``address=None`` starts a local runtime with ``workers`` CPUs (every CPU when None) and shuts it
    down after; an address (``"auto"``, ``"host:6379"``, ``"ray://host:10001"``) joins that cluster.
    At most ``workers`` rows are in flight at once (all of them when None: the cluster's CPUs
    decide). A row's spec travels to the worker by value, its ``measure`` by reference to its
    lesson module, which the worker imports: the cluster's nodes need this version of nodecourse.
    A task that fails (the row raised, or its worker died): with ``keep_going`` the row's verdict is
    :attr:`ClaimVerdict.ERROR`; without it the other tasks are cancelled and the error is raised,
    with a note naming the row.
    """
    with ray_runtime(address, workers) as ray:
        return _gather(ray, specs, quick, keep_going, done, bar, workers)


def import_ray():
    """The ``ray`` module, or an ImportError saying how to install it.

    Imported here, not at load time: Ray is the optional ``cluster`` extra, which ``make course``
    does not install (tests/test_packaging.py allows this one import of an optional extra).
    """
    try:
        import ray
    except ImportError as exc:
        raise ImportError(
            "executor='ray' needs Ray, which is not installed; pip install 'nodecourse[cluster]' (or executor='serial')"
        ) from exc
    return ray


@contextmanager
def ray_runtime(address: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """The ``ray`` module, connected for the block: a local runtime with ``workers`` CPUs (every CPU
    when None) when ``address`` is None, else the cluster at ``address``; shut down (or left) after.

    A runtime this process already started (``ray.init`` in a notebook) is used as it is and left
    running. The local runtime has no dashboard: plain ``ray`` (the ``cluster`` extra) is enough.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    if address is None:
        ray.init(
            num_cpus=workers,
            include_dashboard=False,
            object_store_memory=_OBJECT_STORE_BYTES,
            logging_level="warning",
        )
    else:
        ray.init(address=address, logging_level="warning")
    try:
        yield ray
    finally:
        ray.shutdown()


def _gather(ray, specs, quick, keep_going, done, bar, workers) -> list[ClaimResult]:
    def failed(i: int, exc: BaseException) -> ClaimResult:
        if not keep_going:
            exc.add_note(f"while running claim {specs[i].id!r} as a Ray task")
            raise exc
        cause = getattr(exc, "cause", None) or exc
        print(f"claim {specs[i].id!r}: the Ray task failed: {exc}", file=sys.stderr)
        return _result(specs[i], error_measurement(cause, f"the row's Ray task ({specs[i].id})"), 0.0)

    calls = [(spec, quick, keep_going) for spec in specs]
    return run_tasks(ray, _row_task, calls, workers=workers, done=done, bar=bar, failed=failed)


def run_tasks(
    ray,
    fn: Callable[..., Any],
    calls: Sequence[tuple],
    *,
    workers: int | None = None,
    cpus: int = ROW_CPUS,
    gpus: int = 0,
    done: Callable[[Any], None] | None = None,
    bar=None,
    failed: Callable[[int, BaseException], Any] | None = None,
) -> list[Any]:
    """``fn(*call)`` for each of ``calls`` as one Ray task of ``cpus`` CPUs (and ``gpus`` GPUs); results in
    the order of ``calls``.

    At most ``workers`` tasks are in flight (all of them when None: the cluster's CPUs decide).
    ``done(result)`` runs as each finishes. A task that raised, or whose worker died, goes to
    ``failed(index, exception)``: what it returns stands in for the result; if it raises, the tasks
    still pending are cancelled first. Without ``failed`` the exception is raised that way.
    """
    task = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=0)(fn)
    resources = ray.cluster_resources()
    slots = max(1, int(resources.get("CPU", cpus)) // cpus)
    if gpus:
        slots = max(1, min(slots, int(resources.get("GPU", gpus) // gpus)))
    limit = len(calls) if workers is None else workers
    results: list[Any] = [None] * len(calls)
    waiting = list(range(len(calls)))
    pending: dict[Any, int] = {}
    while waiting or pending:
        while waiting and len(pending) < limit:
            i = waiting.pop(0)
            pending[task.remote(*calls[i])] = i
        if bar is not None:
            bar.set_postfix(running=min(len(pending), slots))
        (ref,), _ = ray.wait(list(pending), num_returns=1)
        i = pending.pop(ref)
        try:
            results[i] = ray.get(ref)
        except Exception as exc:  # noqa: BLE001 - RayTaskError (the task raised) or a worker's death
            try:
                if failed is None:
                    raise
                results[i] = failed(i, exc)
            except BaseException:
                for other in pending:
                    ray.cancel(other)
                raise
        if done is not None:
            done(results[i])
    return results


__all__ = ["EXECUTORS", "RowCache", "code_version", "limit_task_threads", "ray_runtime", "run_tasks"]
