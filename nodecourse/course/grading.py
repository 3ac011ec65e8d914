"""The grader behind ``nodecourse grade NOTEBOOK...``.

The learner's notebook is never run as it is. The grader takes only its
*answer cells* (matched by the ``{"nodecourse": {"answer": id}}`` metadata)
and puts their source into a clean reference copy of the exercise: a fresh
build of ``solutions/<same name>.ipynb`` (equal to the committed exercise, and
untouched by a learner who works in ``exercises/``), the committed
``exercises/<same name>.ipynb`` where there is no solution, or ``--reference``. Every other
cell, the check cells and their expected outputs included, comes from the
reference. So saved outputs, a forged ``PASS`` line, a deleted or an edited
check cell cannot turn into a pass; a missing answer cell keeps its stub and
fails.

The assembled notebook runs under nbval (``python -m pytest --nbval-lax``) in
the current environment, in a temporary directory, with
``NODECOURSE_QUICK=1`` and a per-cell timeout. A small pytest plugin
(:mod:`nodecourse.course.nbval_recorder`, copied in as ``conftest.py``) records each
cell's outcome, so the
grader can print one row per check: exercise, check, pass/fail, reason.

A check cell passes when it runs without error and prints ``PASS <id>`` (its
reference output; extra output such as a warning on stderr is tolerated). A
check passes only when its cell passes *and* the answer cell before it
ran without error: a task whose answer raised (or timed out) is not done,
whatever the check cell printed afterwards.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import nbformat

from nodecourse.course.paths import find_course_root
from nodecourse.course.exercise_builder import (
    ExerciseFormatError,
    answer_id,
    build_exercise,
    check_id,
    notebook_text,
)

DEFAULT_CELL_TIMEOUT_S = 120
_REPORT_ENV = "NODECOURSE_GRADE_REPORT"  # read by nodecourse/nbval_recorder.py
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# Lines that would change how nbval treats a cell (skip it, accept an error):
# never honoured in a learner's answer.
_NBVAL_MARKER = re.compile(r"^\s*#.*\b(NBVAL_\w+|PYTEST_VALIDATE_\w+)")
# Copies that JupyterLab makes ("X-Copy1.ipynb") grade against X.ipynb.
_COPY_SUFFIX = re.compile(r"-Copy\d+$")


class GradingError(RuntimeError):
    """The grader could not grade a notebook (no reference, unreadable file...)."""


@dataclass
class CheckRow:
    """One line of the grade table."""

    notebook: str  # the learner's notebook, as given
    exercise: str  # the reference exercise's file name
    check: str  # check id, or "cell N" for a failing cell that is not a check
    passed: bool
    reason: str  # short: why it failed ("" when passed)
    check_cell_passed: bool  # the check cell's own outcome, before linking to its answer

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------
# Assembling the notebook that is actually run
# ---------------------------------------------------------------------------

def reference_for(notebook: Path, course_root: Path | None = None) -> tuple[object, str, list[str]]:
    """The clean exercise that ``notebook`` is graded against: ``(notebook, file name, warnings)``.

    A learner usually works *in* ``exercises/X.ipynb``, so that file cannot be
    trusted as the reference. The reference is built afresh from
    ``solutions/X.ipynb`` (the single source; the committed exercise equals
    this build, which the tests enforce). Only where there is no solution is
    the committed ``exercises/X.ipynb`` used, with a warning when it is the
    learner's own file.
    """
    root = course_root or find_course_root(notebook.parent) or find_course_root()
    if root is None:
        raise GradingError(
            f"cannot find the course root (a folder with notebooks/ and exercises/) from "
            f"{notebook.parent} or the current directory; run from the course folder or "
            "pass --reference exercises/<name>.ipynb"
        )
    name = _COPY_SUFFIX.sub("", notebook.stem) + ".ipynb"
    solution, exercise = root / "solutions" / name, root / "exercises" / name
    warnings: list[str] = []
    if solution.is_file():
        try:
            built = build_exercise(nbformat.read(solution, as_version=4), name=str(solution))
        except ExerciseFormatError as exc:
            raise GradingError(f"cannot build the reference from {solution}: {exc}") from exc
        if exercise.is_file() and exercise.resolve() != notebook.resolve() \
                and exercise.read_text(encoding="utf-8") != notebook_text(built):
            warnings.append(f"{exercise} differs from a fresh build of {solution}; run `nodecourse build`")
        return built, name, warnings
    if exercise.is_file():
        if exercise.resolve() == notebook.resolve():
            warnings.append(
                f"no solutions/{name} to build a clean reference from: grading against the notebook "
                "itself, so its check cells are trusted as they are"
            )
        return nbformat.read(exercise, as_version=4), name, warnings
    available = sorted(p.name for p in (root / "exercises").glob("*.ipynb"))
    raise GradingError(
        f"no reference exercise {exercise} for notebook {notebook.name!r}; keep the exercise's "
        f"file name (available: {available}) or pass --reference"
    )


def _neutralise_nbval_markers(source: str) -> str:
    return "\n".join(
        "# (nbval marker removed by the grader)" if _NBVAL_MARKER.match(line) else line
        for line in source.split("\n")
    )


def assemble(learner, reference) -> tuple[object, list[str]]:
    """Put the learner's answer cells into a copy of the reference notebook.

    Returns ``(notebook, warnings)``. Only answer-cell *sources* are taken
    from ``learner``; outputs everywhere except check cells are cleared.
    """
    warnings: list[str] = []
    answers: dict[str, str] = {}
    for cell in learner.cells:
        task = answer_id(cell)
        if task is None or cell.cell_type != "code":
            continue
        if task in answers:
            warnings.append(f"answer {task!r} appears more than once; grading the last one")
        answers[task] = cell.source
    nb = nbformat.from_dict(json.loads(json.dumps(reference)))  # a deep, independent copy
    reference_tasks = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        task = answer_id(cell)
        if task is not None:
            reference_tasks.add(task)
            if task in answers:
                cell.source = _neutralise_nbval_markers(answers[task])
            else:
                warnings.append(f"answer {task!r} not found in the notebook; its stub is graded")
        if check_id(cell) is None:
            cell.outputs, cell.execution_count = [], None
    unknown = sorted(set(answers) - reference_tasks)
    if unknown:
        warnings.append(f"answer cells {unknown} are not in the reference exercise and were ignored")
    return nb, warnings


# ---------------------------------------------------------------------------
# Running it
# ---------------------------------------------------------------------------

def _package_parent() -> str:
    return str(Path(__file__).resolve().parent.parent)


def run_nbval(notebook_path: Path, *, timeout_s: float) -> dict[int, dict]:
    """Run nbval on ``notebook_path`` (in its folder); return outcomes by code-cell number.

    Each outcome: ``{"outcome": "passed"|"failed"|"skipped", "message": str,
    "detail": str}``. Raises :class:`GradingError` when nbval itself could not run.
    """
    workdir = notebook_path.parent
    report = workdir / "nbval-report.jsonl"
    report.unlink(missing_ok=True)
    (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    shutil.copyfile(Path(__file__).with_name("nbval_recorder.py"), workdir / "conftest.py")
    env = dict(os.environ)
    env["NODECOURSE_QUICK"] = "1"
    env[_REPORT_ENV] = str(report)
    # The kernel and the plugin import this very copy of nodecourse.
    env["PYTHONPATH"] = os.pathsep.join(
        [_package_parent()] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    n_code = sum(1 for c in nbformat.read(notebook_path, as_version=4).cells if c.cell_type == "code")
    cmd = [
        sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env",
        f"--nbval-cell-timeout={timeout_s:g}",
        "-p", "no:cacheprovider", "-c", str(workdir / "pytest.ini"), "--rootdir", str(workdir),
        "-q", "--color=no", "-o", "console_output_style=classic", str(notebook_path),
    ]
    # Bound the whole run: kernel start, every cell at its timeout, teardown.
    overall = 120 + n_code * (timeout_s + 15)
    try:
        proc = subprocess.run(
            cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=overall
        )
    except subprocess.TimeoutExpired as exc:
        raise GradingError(f"nbval did not finish within {overall:g} s; grading aborted") from exc
    outcomes: dict[int, dict] = {}
    if report.is_file():
        for line in report.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            outcomes[rec["cell"]] = rec
    if not outcomes:
        tail = (proc.stdout + proc.stderr)[-2000:]
        raise GradingError(f"nbval ran no cells (exit code {proc.returncode}); its output:\n{tail}")
    return outcomes


def _short_reason(outcome: dict, timeout_s: float) -> str:
    """One line saying why a cell failed."""
    message, detail = outcome.get("message", ""), outcome.get("detail", "")
    if outcome.get("timed_out"):
        return f"timed out after {timeout_s:g} s"
    if outcome.get("after_timeout"):
        return "failed after an earlier cell timed out"
    if message == "Cell outputs differ":
        return "output differs from the reference check output"
    last = ""
    for line in reversed(_ANSI.sub("", detail).splitlines()):
        if line.strip():
            last = line.strip()
            break
    if last.startswith("NotImplementedError"):
        return "NotImplementedError: task not done"
    if last.startswith("CheckFailed"):
        last = last[len("CheckFailed"):].lstrip(": ")
    if not last:
        last = message or outcome.get("outcome", "failed")
    return last if len(last) <= 160 else last[:157] + "..."


def grade_notebook(
    notebook: Path | str,
    *,
    reference: Path | str | None = None,
    timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
    keep_dir: Path | str | None = None,
) -> tuple[list[CheckRow], list[str]]:
    """Grade one learner notebook; return its table rows and warnings.

    ``reference``: the exercise to grade against (default: see
    :func:`reference_for`). ``timeout_s``: per-cell limit.
    ``keep_dir``: where to leave the assembled notebook (default: a temporary
    directory, removed afterwards).
    """
    notebook = Path(notebook)
    if not notebook.is_file():
        raise GradingError(f"notebook={str(notebook)!r} does not exist; give the path of your exercise notebook")
    if not timeout_s > 0:
        raise GradingError(f"timeout={timeout_s!r}: give a positive number of seconds per cell")
    try:
        learner = nbformat.read(notebook, as_version=4)
    except Exception as exc:  # nbformat raises several types for a broken file
        raise GradingError(f"cannot read {notebook} as a notebook: {exc}") from exc
    if reference is not None:
        ref_path = Path(reference)
        if not ref_path.is_file():
            raise GradingError(f"reference={str(reference)!r} does not exist; give a built exercise notebook")
        ref_nb, ref_name, ref_warnings = nbformat.read(ref_path, as_version=4), ref_path.name, []
    else:
        ref_nb, ref_name, ref_warnings = reference_for(notebook)
    assembled, warnings = assemble(learner, ref_nb)
    warnings = ref_warnings + warnings
    with tempfile.TemporaryDirectory(prefix="nodecourse-grade-") as tmp:
        workdir = Path(keep_dir) if keep_dir is not None else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        target = workdir / ref_name
        nbformat.write(assembled, target)
        outcomes = run_nbval(target, timeout_s=timeout_s)
    return _rows(notebook, ref_name, assembled, outcomes, timeout_s), warnings


def _only_extra_output(outcome: dict, cid: str) -> bool:
    """True when a check cell ran without error and printed its PASS line, and nbval
    failed it only because of output the reference does not have (a warning on
    stderr, a progress bar): noise that must not fail a correct answer."""
    return (
        outcome.get("message") == "Cell outputs differ"
        and f"PASS {cid}" in outcome.get("stdout", "").splitlines()
    )


def _rows(notebook: Path, exercise: str, nb, outcomes: dict[int, dict], timeout_s: float) -> list[CheckRow]:
    rows: list[CheckRow] = []
    last_answer: tuple[str, dict] | None = None  # (task, outcome) of the latest answer cell
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for num, cell in enumerate(code_cells):
        outcome = outcomes.get(num, {"outcome": "failed", "message": "cell was not run"})
        ok = outcome["outcome"] == "passed"
        task, cid = answer_id(cell), check_id(cell)
        if task is not None:
            last_answer = (task, outcome)
            continue
        if cid is not None:
            if not ok and _only_extra_output(outcome, cid):
                ok = True
            passed, reason = ok, "" if ok else _short_reason(outcome, timeout_s)
            if last_answer is not None and last_answer[1]["outcome"] != "passed":
                passed = False
                reason = f"answer {last_answer[0]!r}: {_short_reason(last_answer[1], timeout_s)}"
            rows.append(CheckRow(str(notebook), exercise, cid, passed, reason, ok))
        elif not ok:
            rows.append(CheckRow(str(notebook), exercise, f"cell {num}", False,
                                 _short_reason(outcome, timeout_s), False))
    # An answer cell with no check after it still has to run.
    if last_answer is not None and last_answer[1]["outcome"] != "passed":
        trailing = code_cells.index(next(c for c in code_cells if answer_id(c) == last_answer[0]))
        if not any(check_id(c) for c in code_cells[trailing:]):
            rows.append(CheckRow(str(notebook), exercise, f"answer {last_answer[0]}", False,
                                 _short_reason(last_answer[1], timeout_s), False))
    if not any(check_id(c) for c in code_cells):
        rows.append(CheckRow(str(notebook), exercise, "(no checks)", False,
                             "the reference exercise has no check cells", False))
    return rows


# ---------------------------------------------------------------------------
# Table and command line
# ---------------------------------------------------------------------------

def format_table(rows: Sequence[CheckRow]) -> str:
    """A plain-text table: exercise, check, result, reason."""
    headers = ["exercise", "check", "result", "reason"]
    cells = [[r.exercise, r.check, "pass" if r.passed else "FAIL", r.reason] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]
    widths[-1] = min(widths[-1], 100)

    def fmt(row):
        return " | ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()

    lines = [fmt(headers), "-+-".join("-" * w for w in widths)] + [fmt(c) for c in cells]
    n_pass = sum(r.passed for r in rows)
    lines.append(f"{n_pass}/{len(rows)} checks pass")
    return "\n".join(lines)


def main(
    notebooks: Sequence[str],
    *,
    reference: str | None = None,
    timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
    as_json: bool = False,
    keep_dir: str | None = None,
) -> int:
    """Grade ``notebooks``; print the table (or JSON); return the exit code (0 = all pass)."""
    if reference is not None and len(notebooks) != 1:
        print(f"error: --reference applies to one notebook, got {len(notebooks)}; grade them one by one",
              file=sys.stderr)
        return 2
    all_rows: list[CheckRow] = []
    failed_to_grade = False
    for nb in notebooks:
        if not as_json:
            print(f"grading {nb} (each cell may take up to {timeout_s:g} s) ...", file=sys.stderr, flush=True)
        try:
            rows, warnings = grade_notebook(nb, reference=reference, timeout_s=timeout_s, keep_dir=keep_dir)
        except GradingError as exc:
            print(f"error: {nb}: {exc}", file=sys.stderr)
            failed_to_grade = True
            continue
        for w in warnings:
            print(f"warning: {nb}: {w}", file=sys.stderr)
        all_rows.extend(rows)
        if not as_json:
            if len(notebooks) > 1:
                print(f"\n{nb}")
            print(format_table(rows))
    if as_json:
        print(json.dumps([r.as_dict() for r in all_rows], indent=1))
    elif len(notebooks) > 1:
        n_pass = sum(r.passed for r in all_rows)
        print(f"\ntotal: {n_pass}/{len(all_rows)} checks pass in {len(notebooks)} notebooks")
    ok = bool(all_rows) and all(r.passed for r in all_rows) and not failed_to_grade
    return 0 if ok else 1
