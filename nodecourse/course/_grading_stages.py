"""The stages a submission passes through, once each, in :func:`nodecourse.course.grading.grade_notebook`.

``grade_notebook`` is the pipeline and reads as one: :func:`read_submission` ->
:func:`assemble_submission` -> :func:`plan` -> :func:`start_references` -> :func:`run_cells` ->
``judge`` (the rows, in :mod:`nodecourse.course.grading`, beside :class:`CheckRow`) -> :func:`keep`.
Each stage returns a small frozen record (:class:`Submission`, :class:`Assembly`, :class:`Plan`,
:class:`Outcomes`) that the next stage is given: no stage reads back into the grading module, and
each cell's role and each task spec is resolved once, in :func:`plan`.

The stages live in this private module, not in ``grading.py``, so that the grader's public module
(the pipeline, the rows, the table, the command line) stays one screenful of reading and under
~500 lines; :mod:`nodecourse.course.grading` re-exports what its callers use (``assemble``,
``task_specs``, ``machinery_used``, ``kernel_environment``...).
"""

from __future__ import annotations

import ast
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import nbformat

from nodecourse.course import answer_reading, grading_kernel, sandbox, tasks
from nodecourse.course.exercise_builder import answer_id, check_id
from nodecourse.course.grading_run import NBVAL_MARKER as _NBVAL_MARKER
from nodecourse.course.grading_run import RunError, Runner, _why
from nodecourse.course.references import (
    ADDED_PREFIX,
    OUTSIDE_PREFIX,
    GradingError,
    edited_handouts,
    learner_cells,
    reference_for,
)
from nodecourse.course.tasks import reference as task_reference
from nodecourse.course.textsafe import escape

# ---------------------------------------------------------------------------
# Stage 1: reading the submission and its reference
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Submission:
    """The learner's notebook and the clean exercise it is graded against, both read."""

    path: Path  # the learner's notebook, as given
    learner: object  # its cells (only answer-cell sources and added cells are ever taken)
    reference: object  # the clean exercise
    exercise: str  # the reference's file name
    warnings: tuple[str, ...]  # what finding the reference said
    keep: Path | None  # --keep's folder, checked new or empty


def check_keep_dir(keep_dir: Path) -> Path:
    """``--keep DIR`` writes only into a new or an empty folder."""
    if keep_dir.exists() and (not keep_dir.is_dir() or any(keep_dir.iterdir())):
        raise GradingError(
            f"--keep {keep_dir}: the folder is not empty (or not a folder); give a new or empty "
            "folder, so that nothing there (a notebook, a pytest.ini) is overwritten"
        )
    return keep_dir


def read_notebook(path: Path, what: str):
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


def read_submission(notebook, reference, timeout_s: float, keep_dir) -> Submission:
    """Check the arguments, read the learner's notebook and find and read its reference."""
    notebook = Path(notebook)
    if not notebook.is_file():
        raise GradingError(f"notebook={str(notebook)!r} does not exist; give the path of your exercise notebook")
    if not timeout_s > 0:
        raise GradingError(f"timeout={timeout_s!r}: give a positive number of seconds per cell")
    keep = check_keep_dir(Path(keep_dir)) if keep_dir is not None else None
    learner = read_notebook(notebook, "the notebook")
    if reference is not None:
        ref_path = Path(reference)
        if not ref_path.is_file():
            raise GradingError(f"reference={str(reference)!r} does not exist; give a built exercise notebook")
        ref_nb, ref_name, ref_warnings = read_notebook(ref_path, "the reference"), ref_path.name, []
    else:
        ref_nb, ref_name, ref_warnings = reference_for(notebook)
    return Submission(notebook, learner, ref_nb, ref_name, tuple(ref_warnings), keep)


# ---------------------------------------------------------------------------
# Stage 2: assembling the notebook that is actually run
# ---------------------------------------------------------------------------


def neutralise_nbval_markers(source: str) -> str:
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
            neutralise_nbval_markers(learner.cells[index].source),
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
        added = answer_id(cell)
        if is_added(added):
            serves[added] = list(dict.fromkeys(reversed(later)))
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
    added = {task: cell.source for cell in nb.cells if is_added(task := answer_id(cell))}
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
                cell.source = neutralise_nbval_markers(answers[task])
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


@dataclass(frozen=True)
class Assembly:
    """The notebook that is run: the reference with the learner's answers and added cells in it."""

    notebook: object
    warnings: tuple[str, ...]  # the reference's warnings, then the assembly's


def assemble_submission(submission: Submission) -> Assembly:
    """:func:`assemble` the submission's answers into its reference."""
    notebook, warnings = assemble(submission.learner, submission.reference)
    return Assembly(notebook, (*submission.warnings, *warnings))


# ---------------------------------------------------------------------------
# Stage 3: the plan (which cell is what, the task specs, the seed, the sandbox)
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


def resolve_specs(code_cells, roles) -> dict[int, tuple[tuple[str, str], object]]:
    """Code-cell number -> ((exercise key, check id), task spec) for the check cells converted to task
    specs; ``roles``: each code cell's (answer id, check id)."""
    specs = {}
    for num, cell in enumerate(code_cells):
        cid = roles[num][1]
        call = tasks.spec_call(cell.source) if cid else None
        if call is None:
            continue
        if call[1] != cid:
            raise GradingError(f"check cell {cid!r} calls self_check for {call[1]!r}; the reference is malformed")
        try:
            task = tasks.get_task(*call)
        except tasks.UnknownTask as exc:
            raise GradingError(f"check cell {cid!r}: {exc}") from exc
        specs[num] = (call, task)
    return specs


def task_specs(nb) -> dict[int, tuple[str, str]]:
    """Code-cell number -> (exercise key, check id) for the check cells converted to task specs."""
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    resolved = resolve_specs(code_cells, [(None, check_id(c)) for c in code_cells])
    return {num: call for num, (call, _) in resolved.items()}


@dataclass(frozen=True)
class Plan:
    """What the run and the judge need to know, each piece worked out once."""

    code_cells: tuple  # the assembled notebook's code cells, in order
    roles: tuple[tuple[str | None, str | None], ...]  # each code cell's (answer id, check id)
    specs: dict[int, tuple[str, str]]  # code-cell number -> (exercise key, check id) of a task spec
    tasks: dict[int, object]  # code-cell number -> its task spec (tasks.get_task, once)
    exercise_key: str  # the one exercise whose specs the check cells call ("" when none)
    needs: dict[int, tuple[str, ...]]
    observed: frozenset[int]
    guard: bool  # a check cell still runs in the kernel (the kernel guard goes around it)
    seed: int
    isolation: sandbox.Isolation


def plan(assembly: Assembly, seed: int | None, isolation, notebook_timeout_s: float | None) -> Plan:
    """Which cell is what, the task specs (checked), the inputs' seed (drawn when None) and the sandbox."""
    isolation = isolation or sandbox.probe()
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    code_cells = tuple(c for c in assembly.notebook.cells if c.cell_type == "code")
    roles = tuple((answer_id(c), check_id(c)) for c in code_cells)
    resolved = resolve_specs(code_cells, roles)
    specs = {num: call for num, (call, _) in resolved.items()}
    exercises = {ex for ex, _ in specs.values()}
    if len(exercises) > 1:
        raise GradingError(f"the reference mixes the task specs of exercises {sorted(exercises)}")
    if notebook_timeout_s is not None and not notebook_timeout_s > 0:
        raise GradingError(f"notebook_timeout={notebook_timeout_s!r}: give a positive number of seconds")
    return Plan(
        code_cells=code_cells,
        roles=roles,
        specs=specs,
        tasks={num: task for num, (_, task) in resolved.items()},
        exercise_key=next(iter(exercises), ""),
        needs={num: task.needs for num, (_, task) in resolved.items()},
        observed=frozenset(num for num, (_, task) in resolved.items() if task.observed),
        guard=any(cid and num not in specs for num, (_, cid) in enumerate(roles)),
        seed=seed,
        isolation=isolation,
    )


# ---------------------------------------------------------------------------
# Stage 4: the reference values, from a separate clean process
# ---------------------------------------------------------------------------

_REFERENCES: dict[tuple, dict] = {}  # (exercise, seed, checks) -> decoded references, for a class graded at once


def start_references(the_plan: Plan):
    """Start the reference process (or find its result from an earlier notebook); returns a getter."""
    if not the_plan.specs:
        return lambda: {}
    checks = tuple(c for _, c in the_plan.specs.values())
    key = (the_plan.exercise_key, the_plan.seed, checks)
    if key in _REFERENCES:
        return lambda: _REFERENCES[key]
    environment = kernel_environment(the_plan.isolation)
    handle = task_reference.start(the_plan.exercise_key, checks, the_plan.seed, the_plan.isolation, environment)

    def get() -> dict:
        try:
            _REFERENCES[key] = task_reference.collect(handle)
        except task_reference.ReferenceRunError as exc:
            raise GradingError(str(exc)) from exc
        return _REFERENCES[key]

    return get


# ---------------------------------------------------------------------------
# Stage 5: running the cells in the sandboxed kernel
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcomes:
    """What the run left: each code cell's outcome, the notes, the reference values."""

    cells: dict[int, dict]  # code-cell number -> the kernel's outcome
    notes: tuple[str, ...]
    references: dict  # check id -> the clean process's value


def run_cells(the_plan: Plan, get_references, timeout_s: float, notebook_timeout_s, limits) -> Outcomes:
    """Run the plan's cells (:class:`~nodecourse.course.grading_run.Runner`), then collect the references."""
    runner = Runner(
        list(the_plan.code_cells),
        the_plan.specs,
        timeout_s=timeout_s,
        isolation=the_plan.isolation,
        seed=the_plan.seed,
        guard=the_plan.guard,
        needs=the_plan.needs,
        observed=the_plan.observed,
        notebook_timeout_s=notebook_timeout_s,
        limits=limits,
    )
    try:
        outcomes, notes = runner.run()
    except RunError as exc:
        get_references()  # reap the reference process
        raise GradingError(str(exc)) from exc
    references = get_references()
    for num, (task, _) in enumerate(the_plan.roles):
        outcome = outcomes.get(num, {})
        if is_added(task) and outcome.get("outcome") not in (None, "passed"):
            notes.append(
                f"{task} (a cell you added, run where it sits) {escape(_why(outcome), 300)}; "
                "the checks after it ran without what it would have defined"
            )
    notes += [f"the kernel's last words on stderr: {escape(words, 400)}" for words in runner.last_words]
    return Outcomes(outcomes, tuple(notes), references)


# ---------------------------------------------------------------------------
# Stage 7: keeping the assembled notebook and the outcomes (--keep)
# ---------------------------------------------------------------------------


def keep(submission: Submission, assembly: Assembly, the_plan: Plan, outcomes: Outcomes, rows) -> None:
    """Write the assembled notebook and ``outcomes.json`` into ``--keep``'s folder (when given)."""
    if submission.keep is None:
        return
    submission.keep.mkdir(parents=True, exist_ok=True)
    nbformat.write(assembly.notebook, submission.keep / submission.exercise)
    (submission.keep / "outcomes.json").write_text(
        json.dumps(
            {
                "rows": [r.as_dict() for r in rows],
                "cells": outcomes.cells,
                "notes": list(outcomes.notes),
                "seed": the_plan.seed,
                "isolation": the_plan.isolation.as_dict(),
            },
            indent=1,
        ),
        encoding="utf-8",
    )
