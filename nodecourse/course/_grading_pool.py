"""The class runner's process pool: gradings in worker processes, ended cleanly by a signal.

:func:`run_graders` runs a grader on each submission in spawned workers (each the leader of its own
process group, so what it starts ends with it) and hands every result to one callback in this
process, so whatever the results are written into has one writer. SIGTERM, SIGHUP and SIGINT end
the workers and raise :class:`GradebookStopped`. Used by :mod:`nodecourse.course.gradebook` and
:mod:`nodecourse.course.nbgrader_bridge`.
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import os
import signal
import time
from typing import Sequence

from nodecourse.course._gradebook_csv import GradebookError


class GradebookStopped(GradebookError):
    """A signal (SIGTERM, SIGHUP, SIGINT) stopped the run; its workers are ended, finished rows kept."""

    def __init__(self, signum: int, written: int):
        self.signum, self.written = signum, written
        name = signal.Signals(signum).name
        super().__init__(
            f"stopped by {name}: the grading workers were ended; {written} submission(s) were written to the "
            "gradebook before it; the same command again grades the rest"
        )


# Signals that stop a class run: the workers must not outlive it (they hold a kernel each).
_STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))
_WORKER_GRACE_S = 10.0  # a worker's time to shut its kernel down after SIGTERM before SIGKILL


class _Stop(BaseException):
    """Raised by a stop signal's handler (a BaseException: no ``except Exception`` turns it into a row)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_IN_TASK = False  # in a worker: whether it is grading a submission now


def _worker_start() -> None:
    """Each grading worker leads its own process group (so what it starts can be ended with it); SIGTERM
    in the middle of a grading unwinds its ``finally`` blocks (the kernel shut down), then exits."""
    os.setpgrp()  # also out of the terminal's foreground group: Ctrl-C reaches the parent, which decides
    signal.signal(signal.SIGTERM, _worker_signal)


def _worker_signal(signum, frame):
    if _IN_TASK:
        raise _Stop(signum)
    os._exit(128 + signum)


def _in_worker(grader, job: tuple) -> dict:
    """Run ``grader(job)`` in a worker; a stop signal ends the worker once the grading has unwound."""
    global _IN_TASK
    _IN_TASK = True
    try:
        return grader(job)
    except _Stop as stop:
        os._exit(128 + stop.signum)
    finally:
        _IN_TASK = False


def _end_workers(pool: futures.ProcessPoolExecutor) -> None:
    """SIGTERM to every worker's process group, then SIGKILL to what is left after the grace time."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            for kill in (os.killpg, os.kill):  # the group (what the worker started), then the worker
                try:
                    kill(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        deadline = time.monotonic() + (_WORKER_GRACE_S if sig == signal.SIGTERM else 5.0)
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        if not any(proc.is_alive() for proc in procs):
            break


def check_jobs(jobs: int | None) -> None:
    """Refuse a ``--jobs`` that is not a positive whole number (None: the default, the usable CPUs)."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise GradebookError(f"--jobs {jobs}: give a positive number of submissions to grade at once, e.g. --jobs 2")


def worker_failed(exc: BaseException) -> str:
    """What a row says when its grading worker itself died (out of memory, killed)."""
    return f"the grading worker failed ({type(exc).__name__}: {exc})"


def run_graders(grader, jobs: Sequence[tuple], workers: int, on_result) -> int:
    """The class runner: ``grader(job)`` for each of ``jobs`` in worker processes, at most ``workers`` at
    once (each worker leads its own process group); ``on_result(index, result)`` is called in this
    process, one call at a time, as each grading ends (``result``: the grader's return value, or the
    exception when the worker itself died). Used by :func:`grade_class` and by
    :mod:`nodecourse.course.nbgrader_bridge`, so whatever they write has one writer: this process.

    A stop signal (SIGTERM, SIGHUP, SIGINT) during ``on_result`` waits for it to end; anywhere else it
    stops the run at once: the workers are ended and :class:`GradebookStopped` is raised with the
    number of ``on_result`` calls done. Returns that number."""
    stop = {"busy": False, "signum": None}

    def on_stop(signum, frame):
        stop["signum"] = signum
        if not stop["busy"]:
            raise _Stop(signum)

    written = 0
    if not jobs:
        return written
    context = multiprocessing.get_context("spawn")
    pool = futures.ProcessPoolExecutor(
        max_workers=min(workers, len(jobs)), mp_context=context, initializer=_worker_start
    )
    previous = {}
    try:
        try:
            for signum in _STOP_SIGNALS:
                previous[signum] = signal.signal(signum, on_stop)
        except ValueError:  # not the main thread: signals stay as they are
            pass
        pending = {pool.submit(_in_worker, grader, job): index for index, job in enumerate(jobs)}
        try:
            for future in futures.as_completed(pending):
                try:
                    result = future.result()
                except Exception as exc:  # noqa: BLE001 - the worker itself died (out of memory, killed)
                    result = exc
                stop["busy"] = True
                on_result(pending[future], result)
                written += 1
                stop["busy"] = False
                if stop["signum"] is not None:
                    raise _Stop(stop["signum"])
        except _Stop as exc:
            _end_workers(pool)
            raise GradebookStopped(exc.signum, written) from None
        except BaseException:
            _end_workers(pool)
            raise
        pool.shutdown(wait=True)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return written
