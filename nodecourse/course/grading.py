"""The grader behind ``nodecourse grade NOTEBOOK...``.

The learner's notebook is never run as it is. The grader takes only its
*answer cells* (matched by the ``{"nodecourse": {"answer": id}}`` metadata) and
the code cells the learner *added* (cell ids the exercise as handed out does not
have: :func:`nodecourse.course.references.learner_cells`), and puts them into a
clean reference copy of the exercise, each added cell where it sits in the
learner's notebook, read and run under the answer cells' rules (the write-it-yourself
reach of the answers it can serve, the same sandbox): a fresh
build of ``solutions/<same name>.ipynb`` (learners edit ``exercises/`` in place,
so that folder is never trusted), or ``--reference``. With neither, grading
stops with an error: a notebook is never graded against itself. Every other
cell, the setup and check cells included, comes from the reference, so saved outputs, a
forged ``PASS`` line, a deleted or an edited check cell cannot turn into a pass; a
handed-out cell the learner edited runs as handed out, and the report says so.

The assembled notebook runs in a kernel started inside a sandbox
(:mod:`nodecourse.course.sandbox`: private temporary home and working folder,
the course's code read-only, ``solutions/`` not there, no network, its own
PID namespace; :mod:`nodecourse.course.grading_run` drives it). Where no
sandbox can be made, grading still runs and every report says the grade is for
self-study only.

A check converted to a task spec (:mod:`nodecourse.course.tasks`) is decided
outside the learner's process: the grader builds the inputs from a seed this
run picked, the kernel (which cannot import the task specs) only calls the
learner's function on them and returns the value as plain data
(:mod:`nodecourse.course.tasks.kernel_side`); the reference values come from a
separate clean process; the comparison runs here. Nothing the learner's code does to its own process (patched torch,
rebound names, threads, finalizers, signal handlers, lying objects) reaches a
comparison it does not run. A check not yet converted runs its cell in the
kernel, with :mod:`nodecourse.course.kernel_guard` around it (weaker: the
trust model in CONTRIBUTING.md lists which exercises still do).

Everything the kernel said (error messages, its last words) is printed
escaped (:mod:`nodecourse.course.textsafe`); the report, ``--json``
included, is written by this process after the kernels are gone.
"""

from __future__ import annotations

import ast
import json
import os
import secrets
import sys
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

import nbformat

from nodecourse.course import answer_reading, grading_kernel, sandbox, tasks
from nodecourse.course.exercise_builder import (
    answer_id,
    check_id,
)
from nodecourse.course.grading_run import NBVAL_MARKER as _NBVAL_MARKER
from nodecourse.course.grading_run import REASON_LIMIT, RunError, Runner, _why
from nodecourse.course.references import (  # noqa: F401 (part of the grader's surface)
    ADDED_PREFIX,
    COPY_SUFFIX,
    OUTSIDE_PREFIX,
    GradingError,
    edited_handouts,
    learner_cells,
    reference_for,
)
from nodecourse.course.tasks import reference as task_reference
from nodecourse.course.textsafe import escape
from nodecourse.measure import text_table

DEFAULT_CELL_TIMEOUT_S = 120
DEFAULT_NOTEBOOK_TIMEOUT_S = 1800  # the whole notebook, replays after a restart included
KERNEL_START_TIMEOUT_S = grading_kernel.KERNEL_START_TIMEOUT_S


@dataclass
class CheckRow:
    """One line of the grade table."""

    notebook: str  # the learner's notebook, as given
    exercise: str  # the reference exercise's file name
    check: str  # check id, or "cell N" for a failing cell that is not a check
    passed: bool
    reason: str  # short: why it failed ("" when passed); escaped, safe to print
    check_cell_passed: bool  # the check's own outcome, before linking to its answer
    isolation: str = ""  # sandbox.Isolation.label of the run
    seed: int | None = None  # the seed the task inputs were drawn from (None: a check cell run as it is)
    weight: float = 1.0  # the points the check is worth (its task spec's ``weight``)

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------
# Assembling the notebook that is actually run
# ---------------------------------------------------------------------------


def _neutralise_nbval_markers(source: str) -> str:
    """Blank every marker line, split exactly as nbval splits (``str.splitlines``),
    keeping the other lines and their line ends byte for byte."""
    out = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029")
        if _NBVAL_MARKER.match(body):
            out.append("# (nbval marker removed by the grader)" + line[len(body) :])
        else:
            out.append(line)
    return "".join(out)


# The review flag reads the answers as a person would (:mod:`nodecourse.course.answer_reading`): what
# could answer a task (the library's own answer, a name built at run time, a code object, ``eval``), and
# nothing of ordinary PyTorch (``model.eval()``, ``.modules()``, ``torch.compile``, strings, comments).
MACHINERY_NAMES = answer_reading.INTERPRETER_NAMES


def machinery_used(source: str) -> list[str]:
    """What the review flag names in ``source`` read on its own (no task's reach), sorted."""
    return answer_reading.interpreter_names(source)


def _exercise_key(reference) -> str:
    """The exercise key ("06") whose task specs the reference's check cells call ("" when none)."""
    for cell in reference.cells:
        call = tasks.spec_call(cell.source) if cell.cell_type == "code" and check_id(cell) else None
        if call is not None:
            return call[0]
    return ""


def _read_answers(answers: dict[str, str], reference, serves: dict[str, list[str]]) -> dict[str, list]:
    """Each answer's findings, read with its exercise's declared reach and the reference's own imports;
    an added cell (in ``serves``) with the reach of the answers it can serve."""
    setup = [c.source for c in reference.cells if c.cell_type == "code" and answer_id(c) is None]
    return answer_reading.read_answers(answers, _exercise_key(reference), setup, serves)


def is_added(task: str | None) -> bool:
    """Whether an answer id of the assembled notebook is a cell the learner added."""
    return bool(task) and task.startswith(ADDED_PREFIX + " ")


def _with_added_cells(nb, learner, reference) -> dict[str, list[str]]:
    """Put the code cells the learner added into ``nb`` (a copy of ``reference``), each after the
    handed-out cell it follows in the learner's notebook, carrying the answer id ``added cell N``
    (N: its place in the learner's notebook, from 1), so that they run as answer cells do. Returns,
    for each, the answers whose cells or checks come after it (the tasks it can serve)."""
    after: dict[int, list] = {}
    for index, anchor in learner_cells(learner, reference).added:
        cell = nbformat.v4.new_code_cell(
            _neutralise_nbval_markers(learner.cells[index].source),
            metadata={"nodecourse": {"answer": f"{ADDED_PREFIX} {index + 1}"}},
        )
        after.setdefault(anchor, []).append(cell)
    cells = list(after.get(-1, []))
    for i, cell in enumerate(nb.cells):
        cells += [cell, *after.get(i, [])]
    nb.cells = cells
    served, owner = [], None  # the answer of each answer cell, and of each check cell (the last answer above it)
    for cell in cells:
        task = answer_id(cell)
        if task is not None and not is_added(task):
            owner = task
        served.append(owner if task is not None or check_id(cell) is not None else None)
    serves: dict[str, list[str]] = {}
    later: list[str] = []
    for cell, task in zip(reversed(cells), reversed(served)):
        if is_added(answer_id(cell)):
            serves[answer_id(cell)] = list(dict.fromkeys(reversed(later)))
        elif task is not None:
            later.append(task)
    return serves


_REFUSED_STUB = """
class _GraderRefused:  # the grader: this answer uses what its task asks the learner to write
    def __call__(self, *args, **kwargs):
        raise RuntimeError({message!r})

    def __getattr__(self, name):  # ``LearnerAdjoint.apply``: the same refusal
        if name.startswith("__"):
            raise AttributeError(name)
        raise RuntimeError({message!r})

"""


def _refusing(source: str, refused: list) -> str:
    """``source`` followed by stubs that raise in place of what it defines at top level (called, or an
    attribute read): an answer that uses what its task asks the learner to write fails its checks,
    saying so, its own lines unchanged."""
    try:
        tree = ast.parse(answer_reading.python_text(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return source  # the kernel stops at it too
    defined = [n for n in answer_reading.definitions(tree) if n.isidentifier()]
    message = "this task asks you to write it (" + answer_reading.summary(refused, 2) + ")"
    stubs = _REFUSED_STUB.format(message=message) + "".join(f"{name} = _GraderRefused()\n" for name in defined)
    return source + ("" if source.endswith("\n") else "\n") + stubs + "del _GraderRefused\n"


def assemble(learner, reference) -> tuple[object, list[str]]:
    """Put the learner's answer cells, and the code cells they added, into a copy of the reference notebook.

    Returns ``(notebook, warnings)``. Only answer-cell *sources* are taken
    from ``learner``, and the cells the learner added (:func:`learner_cells`), each where it sits,
    read and run under the answer cells' rules; a handed-out setup or check cell runs as handed
    out, edited or not (warned). Outputs everywhere except check cells are cleared.
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
    serves = _with_added_cells(nb, learner, reference)
    added = {answer_id(c): c.source for c in nb.cells if is_added(answer_id(c))}
    reading = _read_answers({**answers, **added}, reference, serves)
    reference_tasks = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        task = answer_id(cell)
        if task is not None:
            name = task if is_added(task) else f"answer {task!r}"
            if not is_added(task):
                reference_tasks.add(task)
                if task not in answers:
                    warnings.append(f"answer {task!r} not found in the notebook; its stub is graded")
                    cell.outputs, cell.execution_count = [], None
                    continue
                cell.source = _neutralise_nbval_markers(answers[task])
            found = reading.get(task, [])
            refused = [f for f in found if f.kind == answer_reading.REFUSED]
            reached = [f for f in found if f.kind == answer_reading.REVIEW]
            if refused:
                cell.source = _refusing(cell.source, refused)
                warnings.append(
                    f"review: {name} uses what {'a task after it' if is_added(task) else 'its task'} asks the "
                    "learner to write "
                    f"({answer_reading.summary(refused)}); "
                    f"{'the checks that use what it defines' if is_added(task) else 'its checks'} fail with this reason"
                )
            if reached:
                warnings.append(
                    f"review: {name} reaches into the interpreter "
                    f"({', '.join(sorted({f.what for f in reached}))}: {answer_reading.summary(reached)}); "
                    "the reader cannot tell what this code runs: read this answer before giving marks"
                )
        if check_id(cell) is None:
            cell.outputs, cell.execution_count = [], None
    unknown = sorted(set(answers) - reference_tasks)
    if unknown:
        warnings.append(f"answer cells {unknown} are not in the reference exercise and were ignored")
    edited = edited_handouts(learner, reference)
    if edited:
        warnings.append(f"{OUTSIDE_PREFIX} {edited}")
    return nb, warnings


# ---------------------------------------------------------------------------
# Running it, and the rows
# ---------------------------------------------------------------------------


def course_thread_count() -> int:
    """Torch threads for the grader's kernels (:func:`nodecourse.config.course_threads`)."""
    try:
        return grading_kernel.course_thread_count()
    except ValueError as exc:  # a malformed NODECOURSE_THREADS: say so, do not guess
        raise GradingError(str(exc)) from exc


def kernel_environment(isolation: sandbox.Isolation | None = None) -> dict[str, str]:
    """The grading kernel's environment (:func:`nodecourse.course.grading_kernel.kernel_environment`)."""
    try:
        return grading_kernel.kernel_environment(isolation)
    except ValueError as exc:
        raise GradingError(str(exc)) from exc


def task_specs(nb) -> dict[int, tuple[str, str]]:
    """Code-cell number -> (exercise key, check id) for the check cells converted to task specs."""
    specs = {}
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    for num, cell in enumerate(code_cells):
        cid = check_id(cell)
        call = tasks.spec_call(cell.source) if cid else None
        if call is None:
            continue
        if call[1] != cid:
            raise GradingError(f"check cell {cid!r} calls self_check for {call[1]!r}; the reference is malformed")
        try:
            tasks.get_task(*call)
        except tasks.UnknownTask as exc:
            raise GradingError(f"check cell {cid!r}: {exc}") from exc
        specs[num] = call
    return specs


_REFERENCES: dict[tuple, dict] = {}  # (exercise, seed, checks) -> decoded references, for a class graded at once


def _references(specs: dict[int, tuple[str, str]], seed: int, isolation: sandbox.Isolation):
    """Start the reference process (or find its result from an earlier notebook); returns a getter."""
    if not specs:
        return lambda: {}
    exercises = {ex for ex, _ in specs.values()}
    if len(exercises) != 1:
        raise GradingError(f"the reference mixes the task specs of exercises {sorted(exercises)}")
    (ex,) = exercises
    checks = tuple(c for _, c in specs.values())
    key = (ex, seed, checks)
    if key in _REFERENCES:
        return lambda: _REFERENCES[key]
    handle = task_reference.start(ex, checks, seed, isolation, kernel_environment(isolation))

    def get() -> dict:
        try:
            _REFERENCES[key] = task_reference.collect(handle)
        except task_reference.ReferenceRunError as exc:
            raise GradingError(str(exc)) from exc
        return _REFERENCES[key]

    return get


def _check_keep_dir(keep_dir: Path) -> Path:
    """``--keep DIR`` writes only into a new or an empty folder."""
    if keep_dir.exists() and (not keep_dir.is_dir() or any(keep_dir.iterdir())):
        raise GradingError(
            f"--keep {keep_dir}: the folder is not empty (or not a folder); give a new or empty "
            "folder, so that nothing there (a notebook, a pytest.ini) is overwritten"
        )
    return keep_dir


def _read_notebook(path: Path, what: str):
    from nodecourse.course import submission_limits

    size, bound = path.stat().st_size if path.is_file() else 0, submission_limits.MAX_NOTEBOOK_BYTES
    if size > bound:  # refused before parsing: a file's parsed form takes several times its size
        raise GradingError(
            f"{what} {path} is {submission_limits.size_text(size)}, over the grader's "
            f"{submission_limits.size_text(bound)} bound for a "
            "notebook; clear its outputs (Edit > Clear All Outputs, or jupyter nbconvert --clear-output) and save it"
        )
    try:
        return nbformat.read(path, as_version=4)
    except Exception as exc:  # nbformat raises several types for a broken file
        raise GradingError(f"cannot read {what} {path} as a notebook: {exc}") from exc


def grade_notebook(
    notebook: Path | str,
    *,
    reference: Path | str | None = None,
    timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
    keep_dir: Path | str | None = None,
    seed: int | None = None,
    isolation: sandbox.Isolation | None = None,
    notebook_timeout_s: float | None = DEFAULT_NOTEBOOK_TIMEOUT_S,
    limits: sandbox.Limits | None = None,
) -> tuple[list[CheckRow], list[str]]:
    """Grade one learner notebook; return its table rows and warnings (notes included).

    ``reference``: the exercise to grade against (default: see :func:`reference_for`).
    ``timeout_s``: per-cell (and per-task) limit. ``keep_dir``: a new or empty folder
    where the assembled notebook and the outcomes are written after grading.
    ``seed``: the seed of the task inputs (default: drawn now, at random).
    ``isolation``: default :func:`nodecourse.course.sandbox.probe`.
    ``notebook_timeout_s``: the whole notebook's limit (None: only the per-cell one).
    ``limits``: the kernel's memory and /tmp limits (:class:`nodecourse.course.sandbox.Limits`).
    """
    notebook = Path(notebook)
    if not notebook.is_file():
        raise GradingError(f"notebook={str(notebook)!r} does not exist; give the path of your exercise notebook")
    if not timeout_s > 0:
        raise GradingError(f"timeout={timeout_s!r}: give a positive number of seconds per cell")
    keep = _check_keep_dir(Path(keep_dir)) if keep_dir is not None else None
    learner = _read_notebook(notebook, "the notebook")
    if reference is not None:
        ref_path = Path(reference)
        if not ref_path.is_file():
            raise GradingError(f"reference={str(reference)!r} does not exist; give a built exercise notebook")
        ref_nb, ref_name, ref_warnings = _read_notebook(ref_path, "the reference"), ref_path.name, []
    else:
        ref_nb, ref_name, ref_warnings = reference_for(notebook)
    assembled, warnings = assemble(learner, ref_nb)
    warnings = ref_warnings + warnings
    isolation = isolation or sandbox.probe()
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    code_cells = [c for c in assembled.cells if c.cell_type == "code"]
    specs = task_specs(assembled)
    needs = {num: tasks.get_task(*call).needs for num, call in specs.items()}
    guard = any(check_id(c) and num not in specs for num, c in enumerate(code_cells))
    get_references = _references(specs, seed, isolation)
    observed = frozenset(num for num, call in specs.items() if tasks.get_task(*call).observed)
    if notebook_timeout_s is not None and not notebook_timeout_s > 0:
        raise GradingError(f"notebook_timeout={notebook_timeout_s!r}: give a positive number of seconds")
    runner = Runner(
        code_cells,
        specs,
        timeout_s=timeout_s,
        isolation=isolation,
        seed=seed,
        guard=guard,
        needs=needs,
        observed=observed,
        notebook_timeout_s=notebook_timeout_s,
        limits=limits,
    )
    try:
        outcomes, notes = runner.run()
    except RunError as exc:
        get_references()  # reap the reference process
        raise GradingError(str(exc)) from exc
    references = get_references()
    for num, cell in enumerate(code_cells):
        outcome = outcomes.get(num, {})
        if is_added(answer_id(cell)) and outcome.get("outcome") not in (None, "passed"):
            notes.append(
                f"{answer_id(cell)} (a cell you added, run where it sits) {escape(_why(outcome), 300)}; "
                "the checks after it ran without what it would have defined"
            )
    rows = _rows(notebook, ref_name, code_cells, outcomes, specs, references, isolation, seed)
    for words in runner.last_words:
        notes.append(f"the kernel's last words on stderr: {escape(words, 400)}")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        nbformat.write(assembled, keep / ref_name)
        (keep / "outcomes.json").write_text(
            json.dumps(
                {
                    "rows": [r.as_dict() for r in rows],
                    "cells": outcomes,
                    "notes": notes,
                    "seed": seed,
                    "isolation": isolation.as_dict(),
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    return rows, warnings + [f"note: {n}" for n in notes]


def _spec_row(outcome: dict, call: tuple[str, str], references: dict, passed_checks: dict[str, bool]):
    """(passed, reason) of a task-spec check from the kernel's reply and the reference."""
    task = tasks.get_task(*call)
    if outcome.get("outcome") != "answered":
        return False, outcome.get("reason", "failed")
    if task.check not in references:
        raise GradingError(f"the reference process returned no value for check {task.check!r}")
    try:
        reference = references[task.check]
        if outcome.get("measured") is not None and isinstance(reference, dict):
            reference = {**reference, "measured": outcome["measured"]}  # measured by the grader, outside
        verdict = tasks.judge_texts(task, outcome["answer"], reference)
    except Exception as exc:  # a judge that met a value it did not expect: this check fails, the grade goes on
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        return False, (
            f"the answer could not be compared with the reference ({type(exc).__name__}: {first}); "
            "likely cause: a value of the wrong type, size or range (return what the task asks for)"
        )
    reason = verdict.detail
    if not verdict.passed and not reason.startswith("NotImplementedError"):
        first = [c for c in task.after if passed_checks.get(c) is False]
        if first:
            reason += f" (check {first[0]!r} failed too, and this task uses that code: fix it first)"
    return verdict.passed, reason


def _rows(
    notebook: Path,
    exercise: str,
    code_cells,
    outcomes: dict[int, dict],
    specs: dict[int, tuple[str, str]],
    references: dict,
    isolation: sandbox.Isolation,
    seed: int,
) -> list[CheckRow]:
    rows: list[CheckRow] = []
    passed_checks: dict[str, bool] = {}
    last_answer: tuple[str, dict] | None = None  # (task, outcome) of the latest answer cell

    def add(check, passed, reason, own, is_task=False, weight=1.0):
        rows.append(
            CheckRow(
                str(notebook),
                exercise,
                check,
                passed,
                "" if passed else escape(reason, REASON_LIMIT),
                own,
                isolation.label,
                seed if is_task else None,
                weight,
            )
        )
        passed_checks[check] = passed

    for num, cell in enumerate(code_cells):
        outcome = outcomes.get(num, {"outcome": "failed", "reason": "cell was not run"})
        ok = outcome["outcome"] in ("passed", "skipped")
        task, cid = answer_id(cell), check_id(cell)
        if is_added(task):  # its effect shows in the checks after it (a failure: in the notes)
            continue
        if task is not None:
            last_answer = (task, outcome)
            continue
        if num in specs:
            passed, reason = _spec_row(outcome, specs[num], references, passed_checks)
            add(cid, passed, reason, passed, is_task=True, weight=float(tasks.get_task(*specs[num]).weight))
        elif cid is not None:
            passed, reason = ok, outcome.get("reason", "")
            if last_answer is not None and last_answer[1]["outcome"] != "passed":
                passed = False
                reason = f"answer {last_answer[0]!r}: {last_answer[1].get('reason', 'failed')}"
            add(cid, passed, reason, ok)
        elif not ok:
            add(f"cell {num}", False, outcome.get("reason", ""), False)
    # An answer cell with no check after it still has to run.
    if last_answer is not None and last_answer[1]["outcome"] != "passed":
        trailing = code_cells.index(next(c for c in code_cells if answer_id(c) == last_answer[0]))
        if not any(check_id(c) for c in code_cells[trailing:]):
            add(f"answer {last_answer[0]}", False, last_answer[1].get("reason", "failed"), False)
    if not any(check_id(c) for c in code_cells):
        add("(no checks)", False, "the reference exercise has no check cells", False)
    return rows


# ---------------------------------------------------------------------------
# Table and command line
# ---------------------------------------------------------------------------


def format_table(rows: Sequence[CheckRow]) -> str:
    """A plain-text table: exercise, check, result, reason (long reasons wrap at 100 characters).
    Every cell is escaped: nothing in it can move the cursor or clear the terminal."""
    headers = ["exercise", "check", "result", "reason"]
    cells = [[escape(r.exercise), escape(r.check), "pass" if r.passed else "FAIL", escape(r.reason)] for r in rows]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(headers)]
    widths[-1] = min(widths[-1], 100)
    n_pass = sum(r.passed for r in rows)
    return text_table(headers, cells, widths=widths) + f"\n{n_pass}/{len(rows)} checks pass"


def _no_peeking() -> None:
    """Make this process non-dumpable (Linux): another process of the same user, such as
    a kernel without a sandbox or a process it started, can then neither trace it nor open
    its files and memory through /proc/<pid>/. Elsewhere, nothing to do."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def main(
    notebooks: Sequence[str],
    *,
    reference: str | None = None,
    timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
    as_json: bool = False,
    keep_dir: str | None = None,
    seed: int | None = None,
    notebook_timeout_s: float | None = DEFAULT_NOTEBOOK_TIMEOUT_S,
    limits: sandbox.Limits | None = None,
) -> int:
    """Grade ``notebooks``; print the table (or JSON); return the exit code (0 = all pass)."""
    if reference is not None and len(notebooks) != 1:
        print(
            f"error: --reference applies to one notebook, got {len(notebooks)}; grade them one by one", file=sys.stderr
        )
        return 2
    if keep_dir is not None:
        try:
            _check_keep_dir(Path(keep_dir))
        except GradingError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    _no_peeking()
    isolation = sandbox.probe()
    seed = secrets.randbelow(2**31) if seed is None else seed
    all_rows: list[CheckRow] = []
    failed_to_grade = False
    text_out: list[str] = []  # printed once every kernel is gone
    for i, nb in enumerate(notebooks):
        if not as_json:
            print(f"grading {nb} (each cell may take up to {timeout_s:g} s) ...", file=sys.stderr, flush=True)
        keep = None
        if keep_dir is not None:
            keep = Path(keep_dir) if len(notebooks) == 1 else Path(keep_dir) / f"{i + 1:02d}-{Path(nb).stem}"
        try:
            rows, warnings = grade_notebook(
                nb,
                reference=reference,
                timeout_s=timeout_s,
                keep_dir=keep,
                seed=seed,
                isolation=isolation,
                notebook_timeout_s=notebook_timeout_s,
                limits=limits,
            )
        except GradingError as exc:
            print(f"error: {escape(nb)}: {escape(exc)}", file=sys.stderr)
            failed_to_grade = True
            continue
        except Exception as exc:  # a grader fault on one notebook never stops the grading of the next
            if os.environ.get("NODECOURSE_TRACEBACK") == "1":
                traceback.print_exc()
            print(
                f"error: {escape(nb)}: the grader failed on this notebook ({type(exc).__name__}: {escape(exc)}); "
                "it is not graded, the others are; NODECOURSE_TRACEBACK=1 prints the traceback",
                file=sys.stderr,
            )
            failed_to_grade = True
            continue
        notes = [w[len("note: ") :] for w in warnings if w.startswith("note: ")]
        for w in warnings:
            if not w.startswith("note: "):
                print(f"warning: {escape(nb)}: {escape(w)}", file=sys.stderr)
        all_rows.extend(rows)
        if as_json:
            for n in notes:
                print(f"note: {escape(nb)}: {escape(n)}", file=sys.stderr)
        else:
            if len(notebooks) > 1:
                text_out.append(f"\n{escape(nb)}")
            text_out.append(format_table(rows))
            text_out.append(f"seed: {seed} (nodecourse grade --seed {seed} draws the same inputs again)")
            text_out.extend(f"note: {escape(n)}" for n in notes)
    if as_json:
        print(json.dumps([r.as_dict() for r in all_rows], indent=1))
        print(isolation.describe(), file=sys.stderr)
    else:
        print("\n".join(text_out))
        if len(notebooks) > 1:
            n_pass = sum(r.passed for r in all_rows)
            print(f"\ntotal: {n_pass}/{len(all_rows)} checks pass in {len(notebooks)} notebooks")
        print(isolation.describe())
    ok = bool(all_rows) and all(r.passed for r in all_rows) and not failed_to_grade
    return 0 if ok else 1
