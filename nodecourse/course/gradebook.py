"""An instructor grades a class: ``nodecourse grade submissions/*.ipynb --gradebook grades.csv``.

Each submission is graded as ``nodecourse grade`` grades one notebook (its own
sandboxed kernel, task inputs from a seed drawn for this run), several at once
up to the usable CPUs (:func:`nodecourse.config.usable_cpus`, or ``--jobs``).
The CSV has one row per submission and one column per check (``pass`` /
``FAIL``), then the total, the seconds it took, the isolation and the seed;
a submission that could not be graded has an ``error`` and no checks.

Rows are written as they finish, so an interrupted run loses only the
submissions in progress; run the same command again and it skips every
submission whose row is there for the same file content (SHA-256), and grades
again a submission whose file changed. At the end it prints a summary of the
class: the pass rate of every check and the mean total.
"""
from __future__ import annotations

import concurrent.futures as futures
import csv
import hashlib
import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

FIXED_BEFORE = ["submission", "sha256", "exercise"]
FIXED_AFTER = ["total", "passed", "checks", "time_s", "isolation", "seed", "error"]


class GradebookError(RuntimeError):
    """The gradebook cannot be written or resumed (the message names the file and the fix)."""


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _check_columns(notebooks: Sequence[Path], reference: str | None) -> tuple[list[str], dict[str, list[str]]]:
    """The check columns (in notebook order) and, per exercise file name, its check ids."""
    import nbformat

    from nodecourse.course import grading
    from nodecourse.course.exercise_builder import check_id

    per_exercise: dict[str, list[str]] = {}
    for nb in notebooks:
        if reference is not None:
            ref, name = nbformat.read(reference, as_version=4), Path(reference).name
        else:
            try:
                ref, name, _ = grading.reference_for(Path(nb))
            except grading.GradingError:
                continue  # graded later, and its row says why it could not be
        if name not in per_exercise:
            per_exercise[name] = [check_id(c) for c in ref.cells if check_id(c)]
    if len(per_exercise) <= 1:
        columns = next(iter(per_exercise.values()), [])
    else:
        columns = [f"{name[:2]}:{c}" for name, checks in per_exercise.items() for c in checks]
    return columns, per_exercise


def _grade_one(job: tuple[str, str | None, float, int]) -> dict:
    """Grade one submission (in a worker process); the row's values, without the check columns' names."""
    path, reference, timeout_s, seed = job
    from nodecourse.course import grading, sandbox

    start = time.monotonic()
    isolation = sandbox.probe()
    try:
        rows, _ = grading.grade_notebook(path, reference=reference, timeout_s=timeout_s, seed=seed,
                                         isolation=isolation)
        error = ""
    except grading.GradingError as exc:
        rows, error = [], str(exc)
    return {"path": path, "rows": [r.as_dict() for r in rows], "error": error,
            "time_s": time.monotonic() - start, "isolation": isolation.label, "seed": seed}


def _row(result: dict, digest: str, columns: list[str], several: bool) -> dict[str, str]:
    from nodecourse.course.textsafe import escape

    row = {c: "" for c in FIXED_BEFORE + columns + FIXED_AFTER}
    row.update(submission=result["path"], sha256=digest, time_s=f"{result['time_s']:.1f}",
               isolation=result["isolation"], seed=str(result["seed"]), error=escape(result["error"], 300))
    checks = [r for r in result["rows"] if not r["check"].startswith(("cell ", "answer ", "("))]
    if checks:
        row["exercise"] = checks[0]["exercise"]
    passed = 0
    for r in checks:
        column = f"{r['exercise'][:2]}:{r['check']}" if several else r["check"]
        if column in row:
            row[column] = "pass" if r["passed"] else "FAIL"
            passed += r["passed"]
    row["passed"], row["checks"] = str(passed), str(len(checks))
    row["total"] = f"{passed}/{len(checks)}" if checks else "0/0"
    return row


def _read_existing(csv_path: Path, header: list[str]) -> list[dict[str, str]]:
    if not csv_path.exists():
        return []
    with open(csv_path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != header:
            raise GradebookError(
                f"--gradebook {csv_path}: its columns {reader.fieldnames} are not this run's {header} (other "
                "exercises or checks); give a new file name, or the submissions that file was made for")
        return list(reader)


def _write_all(csv_path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    tmp = csv_path.with_name(csv_path.name + ".tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    os.replace(tmp, csv_path)


@dataclass
class Summary:
    """What a gradebook run did, and the class's results."""

    graded: int
    skipped: int
    rows: list[dict[str, str]]
    columns: list[str]
    seconds: float
    jobs: int

    def lines(self) -> list[str]:
        n = len(self.rows)
        out = [f"{self.graded} submission(s) graded, {self.skipped} skipped (unchanged since their row was "
               f"written), in {self.seconds:.0f} s with {self.jobs} at a time"]
        if not n:
            return out
        width = max([len("check")] + [len(c) for c in self.columns])
        out.append(f"{'check'.ljust(width)}  pass rate")
        for c in self.columns:
            k = sum(r.get(c) == "pass" for r in self.rows)
            out.append(f"{c.ljust(width)}  {k}/{n} ({k / n:.0%})")
        totals = [int(r["passed"] or 0) for r in self.rows]
        errors = sum(bool(r.get("error")) for r in self.rows)
        out.append(f"mean total {sum(totals) / n:.2f} of {len(self.columns)} checks over {n} submission(s)"
                   + (f"; {errors} could not be graded (see the error column)" if errors else ""))
        return out


def grade_class(notebooks: Sequence[str], csv_path: str | Path, *, timeout_s: float, jobs: int | None = None,
                seed: int | None = None, reference: str | None = None) -> Summary:
    """Grade ``notebooks`` into ``csv_path`` as the module docstring describes; returns the summary."""
    import secrets

    from nodecourse.config import usable_cpus

    csv_path = Path(csv_path)
    if csv_path.suffix.lower() != ".csv":
        raise GradebookError(f"--gradebook {csv_path}: give a file name ending in .csv")
    missing = [nb for nb in notebooks if not Path(nb).is_file()]
    if missing:
        raise GradebookError(f"these submissions do not exist: {missing}; give notebook files")
    if jobs is not None and jobs < 1:
        raise GradebookError(f"--jobs {jobs}: give a positive number of submissions to grade at once")
    columns, per_exercise = _check_columns([Path(nb) for nb in notebooks], reference)
    header = FIXED_BEFORE + columns + FIXED_AFTER
    digests = {nb: file_hash(Path(nb)) for nb in notebooks}
    existing = _read_existing(csv_path, header)
    kept = [r for r in existing if digests.get(r["submission"]) == r["sha256"] and not r.get("error")]
    done = {r["submission"] for r in kept}
    if len(kept) != len(existing) or not csv_path.exists():
        _write_all(csv_path, header, kept)  # rows of files that changed since are dropped, to be graded again
    todo = [nb for nb in dict.fromkeys(notebooks) if nb not in done]
    jobs = jobs or usable_cpus()[0]
    seed = secrets.randbelow(2 ** 31) if seed is None else int(seed)
    start = time.monotonic()
    rows = list(kept)
    several = len(per_exercise) > 1
    if todo:
        context = multiprocessing.get_context("spawn")
        with futures.ProcessPoolExecutor(max_workers=min(jobs, len(todo)), mp_context=context) as pool, \
                open(csv_path, "a", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=header)
            pending = [pool.submit(_grade_one, (nb, reference, timeout_s, seed)) for nb in todo]
            try:
                for future in futures.as_completed(pending):
                    result = future.result()
                    row = _row(result, digests[result["path"]], columns, several)
                    writer.writerow(row)
                    fh.flush()  # on disk now: an interruption keeps it
                    rows.append(row)
            except KeyboardInterrupt:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    order = {nb: i for i, nb in enumerate(notebooks)}
    rows.sort(key=lambda r: order.get(r["submission"], len(order)))
    _write_all(csv_path, header, rows)
    return Summary(len(todo), len(kept), rows, columns, time.monotonic() - start, jobs)
