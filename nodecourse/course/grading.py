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

A submission passes through the stages once each, in the order :func:`grade_notebook`
lists them: read (the notebook and its reference) -> assemble -> plan (which cell is
what, the task specs, the seed, the sandbox) -> start the references -> run the cells ->
judge (the rows) -> keep (``--keep``). Each stage is given what the one before returned
(:mod:`nodecourse.course._grading_stages` holds them; the judge is here, beside
:class:`CheckRow`), so nothing outside this module calls back into it while a
submission is graded (``benchmarks/grading_reentries.py`` counts it).
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from nodecourse.course import _grading_stages as stages
from nodecourse.course import answer_reading, grading_kernel, sandbox, tasks
from nodecourse.course._grading_stages import (  # noqa: F401 (part of the grader's surface)
    assemble,
    course_thread_count,
    is_added,
    kernel_environment,
    task_specs,
)
from nodecourse.course._grading_stages import check_keep_dir as _check_keep_dir
from nodecourse.course._grading_stages import neutralise_nbval_markers as _neutralise_nbval_markers  # noqa: F401
from nodecourse.course.exercise_builder import answer_id, check_id
from nodecourse.course.grading_run import REASON_LIMIT
from nodecourse.course.references import (  # noqa: F401 (part of the grader's surface)
    ADDED_PREFIX,
    COPY_SUFFIX,
    OUTSIDE_PREFIX,
    GradingError,
    edited_handouts,
    learner_cells,
    reference_for,
)
from nodecourse.course.textsafe import escape
from nodecourse.measure import text_table

DEFAULT_CELL_TIMEOUT_S = 120
DEFAULT_NOTEBOOK_TIMEOUT_S = 1800  # the whole notebook, replays after a restart included
KERNEL_START_TIMEOUT_S = grading_kernel.KERNEL_START_TIMEOUT_S

# The review flag reads the answers as a person would (:mod:`nodecourse.course.answer_reading`): what
# could answer a task (the library's own answer, a name built at run time, a code object, ``eval``), and
# nothing of ordinary PyTorch (``model.eval()``, ``.modules()``, ``torch.compile``, strings, comments).
MACHINERY_NAMES = answer_reading.INTERPRETER_NAMES


def machinery_used(source: str) -> list[str]:
    """What the review flag names in ``source`` read on its own (no task's reach), sorted."""
    return answer_reading.interpreter_names(source)


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
# The pipeline
# ---------------------------------------------------------------------------


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
    submission = stages.read_submission(notebook, reference, timeout_s, keep_dir)
    assembly = stages.assemble_submission(submission)
    plan = stages.plan(assembly, seed, isolation, notebook_timeout_s)
    get_references = stages.start_references(plan)
    outcomes = stages.run_cells(plan, get_references, timeout_s, notebook_timeout_s, limits)
    rows = judge(submission, plan, outcomes)
    stages.keep(submission, assembly, plan, outcomes, rows)
    return rows, [*assembly.warnings, *(f"note: {n}" for n in outcomes.notes)]


# ---------------------------------------------------------------------------
# Judging: the rows
# ---------------------------------------------------------------------------


def judge(submission: stages.Submission, plan: stages.Plan, outcomes: stages.Outcomes) -> list[CheckRow]:
    """The grade table's rows: each check's outcome, a task spec's answer compared with its reference here."""
    return _judged(
        submission.path,
        submission.exercise,
        list(plan.code_cells),
        plan.roles,
        outcomes.cells,
        plan.specs,
        plan.tasks,
        outcomes.references,
        plan.isolation,
        plan.seed,
    )


def _spec_row(outcome: dict, task, references: dict, passed_checks: dict[str, bool]):
    """(passed, reason) of a task-spec check from the kernel's reply and the reference."""
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
    """:func:`judge`'s rows from the parts (each cell's role and task spec looked up here)."""
    roles = [(answer_id(c), check_id(c)) for c in code_cells]
    specs_tasks = {num: tasks.get_task(*call) for num, call in specs.items()}
    return _judged(notebook, exercise, code_cells, roles, outcomes, specs, specs_tasks, references, isolation, seed)


def _judged(notebook, exercise, code_cells, roles, outcomes, specs, specs_tasks, references, isolation, seed):
    """The rows; ``roles``: each code cell's (answer id, check id); ``specs_tasks``: each spec's task."""
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

    for num, (task, cid) in enumerate(roles):
        outcome = outcomes.get(num, {"outcome": "failed", "reason": "cell was not run"})
        ok = outcome["outcome"] in ("passed", "skipped")
        if is_added(task):  # its effect shows in the checks after it (a failure: in the notes)
            continue
        if task is not None:
            last_answer = (task, outcome)
            continue
        if num in specs:
            passed, reason = _spec_row(outcome, specs_tasks[num], references, passed_checks)
            add(cid, passed, reason, passed, is_task=True, weight=float(specs_tasks[num].weight))
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
        trailing = next(num for num, (task, _) in enumerate(roles) if task == last_answer[0])
        if not any(cid for _, cid in roles[trailing:]):
            add(f"answer {last_answer[0]}", False, last_answer[1].get("reason", "failed"), False)
    if not any(cid for _, cid in roles):
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
