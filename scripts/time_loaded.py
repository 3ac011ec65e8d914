"""Time the course on a two-core machine, idle and with another process busy on one core.

Usage (from the course folder, with the course's venv)::

    .venv/bin/python scripts/time_loaded.py                 # every task, idle only
    .venv/bin/python scripts/time_loaded.py --busy          # idle and loaded, with the ratio
    .venv/bin/python scripts/time_loaded.py --busy --tasks lesson03 grade03 --markdown out.md

Tasks: ``lessonNN`` runs ``notebooks/NN_*.ipynb`` top to bottom in quick mode
(a fresh kernel, a copy in a temporary folder: the repository is not
touched); ``gradeNN`` runs ``nodecourse grade solutions/NN_*.ipynb`` (every
check runs its full work); ``claims`` runs ``nodecourse claims --quick``.

Each task runs under two thread settings:

- *before*: torch's default thread count (the number of cores torch sees), as
  the course ran before it picked its threads: ``NODECOURSE_THREADS`` is set to
  that count, which every process (CLI, kernels) then applies;
- *after*: the course's own choice (:func:`nodecourse.config.thread_choice`),
  with ``OMP_NUM_THREADS`` and ``NODECOURSE_THREADS`` unset.

``--busy`` adds a loaded run of each: a ``while True: pass`` process pinned
to the first of the measured CPUs for the duration of the run. All measured
processes are pinned to two CPUs (``--cpus``, default the first two this
process may use), so a bigger machine stands in for a two-core one. The
figures are wall-clock seconds of one run each (``--repeat`` for the median
of several); they are only meaningful on an otherwise quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LIMIT = 1.5  # a loaded run may take at most this many times its idle time


@dataclass
class Task:
    name: str
    label: str
    argv: list[str]


@dataclass
class Row:
    task: str
    label: str
    threads: dict = field(default_factory=dict)  # setting -> thread count
    seconds: dict = field(default_factory=dict)  # "before/idle" -> seconds (None: failed)
    failures: dict = field(default_factory=dict)  # "before/idle" -> tail of the output


def discover_tasks() -> list[Task]:
    tasks = []
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        tasks.append(Task(f"lesson{nb.name[:2]}", f"lesson {nb.stem} (quick)", ["lesson", str(nb)]))
    for sol in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb")):
        # A long per-cell limit: the table measures the work, which the grader's own limit would cut.
        tasks.append(
            Task(
                f"grade{sol.name[:2]}",
                f"nodecourse grade {sol.stem}",
                [str(BIN / "nodecourse"), "grade", "--timeout", "3600", str(sol)],
            )
        )
    tasks.append(Task("claims", "nodecourse claims --quick", [str(BIN / "nodecourse"), "claims", "--quick"]))
    return tasks


def _probe(code: str, env: dict, cpus: set[int]) -> int:
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        preexec_fn=lambda: os.sched_setaffinity(0, cpus),
    )
    return int(out.stdout.strip())


def torch_default_threads(env: dict, cpus: set[int]) -> int:
    """torch's thread count in a fresh process on ``cpus`` with no thread setting (what it picks itself)."""
    clean = {k: v for k, v in env.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NODECOURSE_THREADS")}
    return _probe("import torch; print(torch.get_num_threads())", clean, cpus)


def course_thread_count(env: dict, cpus: set[int]) -> int:
    return _probe("from nodecourse.config import course_threads; print(course_threads())", env, cpus)


def setting_env(base: dict, setting: str, before_threads: int) -> dict:
    env = {k: v for k, v in base.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NODECOURSE_THREADS")}
    env["NODECOURSE_QUICK"] = "1"
    if setting == "before":
        env["NODECOURSE_THREADS"] = str(before_threads)
    return env


def command_for(task: Task, workdir: Path) -> list[str]:
    if task.argv[0] != "lesson":
        return task.argv
    notebook = Path(task.argv[1])
    # The lesson runs from its own folder (relative paths in it), saved to a temporary copy.
    return [
        sys.executable,
        "-m",
        "jupyter",
        "nbconvert",
        "--to",
        "notebook",
        "--execute",
        "--ExecutePreprocessor.timeout=-1",
        "--ExecutePreprocessor.kernel_name=python3",
        "--output-dir",
        str(workdir),
        "--output",
        notebook.stem + "-timed",
        str(notebook),
    ]


def start_busy(cpu: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", "while True: pass"], preexec_fn=lambda: os.sched_setaffinity(0, {cpu})
    )


def run_once(cmd: list[str], env: dict, cpus: set[int], timeout: float) -> tuple[float | None, str]:
    """Run ``cmd`` on ``cpus``; (wall seconds, "" or why it failed). The run gets its own session,
    so a timeout or an interrupted script also stops its kernels."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: os.sched_setaffinity(0, cpus),
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout:g} s"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the run left behind (a kernel)
        except ProcessLookupError:
            pass
        proc.wait()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:  # timed all the same (a failing check still did its work), and flagged
        return seconds, f"exit {proc.returncode}: {output[-400:]}"
    return seconds, ""


def fmt(seconds: float | None, failed: bool = False) -> str:
    if seconds is None:
        return "failed"
    text = f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    return text + (" (exit != 0)" if failed else "")


def ratio(row: Row, setting: str) -> str:
    idle, loaded = row.seconds.get(f"{setting}/idle"), row.seconds.get(f"{setting}/loaded")
    if idle is None or loaded is None:
        return "-"
    r = loaded / idle
    return f"{r:.2f}x" + ("" if r <= LIMIT else f" (> {LIMIT}x)")


def table(rows: list[Row], busy: bool, settings: list[str]) -> str:
    head = ["task"]
    for s in settings:
        n = rows[0].threads[s] if rows else "?"
        head += [f"{s} ({n} thr) idle"] + ([f"{s} loaded", f"{s} loaded/idle"] if busy else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row.label]
        for s in settings:
            cells.append(fmt(row.seconds.get(f"{s}/idle"), f"{s}/idle" in row.failures))
            if busy:
                cells += [fmt(row.seconds.get(f"{s}/loaded"), f"{s}/loaded" in row.failures), ratio(row, s)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _interrupt(signum, frame):
    """A `kill` of this script stops the run in progress and the busy loop too (their finally blocks)."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--busy", action="store_true", help="also time each task with a busy-loop process on one of the measured CPUs"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        default=None,
        metavar="TASK",
        help="only these (lessonNN, gradeNN, claims; default every task)",
    )
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["before", "after"],
        choices=["before", "after"],
        help="thread settings to time (default both)",
    )
    parser.add_argument(
        "--cpus",
        default=None,
        help="comma-separated CPU ids the measured processes run on (default: the first two usable)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell of the table; the median is shown")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before a run counts as failed")
    parser.add_argument("--markdown", default=None, help="also write the table to this file")
    parser.add_argument("--json", default=None, help="also write every measurement to this JSON file")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)

    usable = sorted(os.sched_getaffinity(0))
    cpus = [int(c) for c in args.cpus.split(",")] if args.cpus else usable[:2]
    if len(cpus) != 2:
        print(f"note: measuring on CPUs {cpus}, not two", file=sys.stderr)
    base = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    base["PYTHONPATH"] = os.pathsep.join([str(ROOT), base.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # torch's own default, as a process pinned to the measured CPUs sees it
    before_threads = torch_default_threads(base, set(cpus))
    after_threads = course_thread_count(setting_env(base, "after", before_threads), set(cpus))
    threads = {"before": before_threads, "after": after_threads}

    tasks = discover_tasks()
    if args.tasks:
        known = {t.name for t in tasks}
        unknown = sorted(set(args.tasks) - known)
        if unknown:
            parser.error(f"--tasks {unknown}: not a task here; choose from {sorted(known)}")
        tasks = [t for t in tasks if t.name in args.tasks]
    conditions = ["idle", "loaded"] if args.busy else ["idle"]
    print(
        f"CPUs {cpus}; threads before: {before_threads} (torch's default), after: {after_threads} "
        f"(the course's choice); {'idle and loaded' if args.busy else 'idle only'}",
        file=sys.stderr,
    )

    rows = []
    with tempfile.TemporaryDirectory(prefix="nodecourse-timing-") as tmp:
        for task in tasks:
            row = Row(task.name, task.label, threads={s: threads[s] for s in args.settings})
            for setting in args.settings:
                env = setting_env(base, setting, before_threads)
                for condition in conditions:
                    times = []
                    for _ in range(args.repeat):
                        busy = start_busy(cpus[0]) if condition == "loaded" else None
                        try:
                            seconds, why = run_once(command_for(task, Path(tmp)), env, set(cpus), args.timeout)
                        finally:
                            if busy is not None:
                                busy.kill()
                                busy.wait()
                        if why:
                            row.failures[f"{setting}/{condition}"] = why
                        if seconds is None:
                            times = []
                            break
                        times.append(seconds)
                    key = f"{setting}/{condition}"
                    row.seconds[key] = statistics.median(times) if times else None
                    print(
                        f"  {task.name:10s} {setting:6s} {condition:6s} {fmt(row.seconds[key], key in row.failures)}"
                        + (f"  ({row.failures[key]})" if key in row.failures else ""),
                        file=sys.stderr,
                        flush=True,
                    )
            rows.append(row)

    text = table(rows, args.busy, args.settings)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1) + "\n", encoding="utf-8")
    over = [
        r.task
        for r in rows
        for s in args.settings
        if s == "after"
        and args.busy
        and r.seconds.get("after/idle")
        and r.seconds.get("after/loaded")
        and r.seconds["after/loaded"] > LIMIT * r.seconds["after/idle"]
    ]
    failed = [r.task for r in rows if r.failures]
    if failed:
        print(f"runs that exited non-zero (timed all the same): {failed}", file=sys.stderr)
        for r in rows:
            for key, why in r.failures.items():
                print(f"  {r.task} {key}: {why[-300:]}", file=sys.stderr)
    if over:
        print(f"loaded runs over {LIMIT}x idle with the course's threads: {over}", file=sys.stderr)
    return 1 if failed or over else 0


if __name__ == "__main__":
    sys.exit(main())
