"""What a learner's notebook is graded against, and which of its code the grader runs.

:func:`reference_for` builds the clean exercise a notebook is graded against from
``solutions/``, or, in a copy of the course as handed out (no ``solutions/``), takes it from the
exercises shipped with the package (:mod:`nodecourse.course.handout`: the clean exercises, stub answer
cells and all, nothing of the solutions); :func:`learner_cells` tells the cells a learner added (the
grader runs them, where they sit, under the answer cells' rules) from the handed-out cells they
edited (the grader runs those as handed out). Both read notebooks only, so the notebook's own self-check
(:func:`nodecourse.course.tasks.self_check`) can say what the grader will say without importing the
grader. :func:`write_handout` writes the shipped exercises from ``solutions/`` (after a solution changed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from nodecourse.course.exercise_builder import ExerciseFormatError, answer_id, build_exercise, check_id
from nodecourse.course.paths import find_course_root

# Copies that JupyterLab makes ("X-Copy1.ipynb") and the names browsers and LMS downloads give a
# second copy ("X (1).ipynb", "X-1.ipynb") grade against X.ipynb.
COPY_SUFFIX = re.compile(r"(?:-Copy\d+|\s*\(\d+\)|-\d+)+$")


class GradingError(RuntimeError):
    """The grader could not grade a notebook (no reference, unreadable file...)."""


def _matching(stem: str, available: list[str]) -> str | None:
    """The exercise file name ``stem`` grades against: itself, or the one available name it ends
    with after a ``-``, ``_``, space or dot (a class's ``alice-01_..._exercises``)."""
    if stem + ".ipynb" in available:
        return stem + ".ipynb"
    ends = [
        n
        for n in available
        if stem.endswith(n[: -len(".ipynb")])
        and stem[: len(stem) - len(n) + len(".ipynb")][-1:] in ("-", "_", " ", ".")
    ]
    return ends[0] if len(ends) == 1 else None


def reference_for(notebook: Path, course_root: Path | None = None) -> tuple[object, str, list[str]]:
    """The clean exercise that ``notebook`` is graded against: ``(notebook, file name, warnings)``.

    A fresh build of ``solutions/<same name>.ipynb`` (or of the one solution whose
    name the notebook's name ends with, after a ``-``, ``_``, space or dot: a class's
    ``alice-01_..._exercises.ipynb``; JupyterLab's ``-Copy1`` is ignored): a learner works
    *in* ``exercises/``, so nothing there is trusted. In a course without ``solutions/`` (a
    learner's copy, as handed out) the same exercise as shipped with the package
    (:mod:`nodecourse.course.handout`), matched by the same rule. Without either,
    :class:`GradingError` names what is missing and what to pass (``--reference PATH``, an
    exercise you trust).
    """
    root = course_root or find_course_root(notebook.parent) or find_course_root()
    if root is None:
        raise GradingError(
            f"cannot find the course root (a folder with notebooks/ and the nodecourse package) from "
            f"{notebook.parent} or the current directory; run from the course folder or "
            "pass --reference PATH (a clean exercise notebook)"
        )
    stem = COPY_SUFFIX.sub("", notebook.stem)
    if not (root / "solutions").is_dir():
        return _shipped_reference(notebook, stem, root)
    available = sorted(p.name for p in (root / "solutions").glob("*.ipynb"))
    name = _matching(stem, available) or stem + ".ipynb"
    solution = root / "solutions" / name
    if not solution.is_file():
        raise GradingError(
            f"no reference for {notebook.name!r}: the grader builds it from {solution}, which does not "
            f"exist (solutions: {available}); keep the exercise's file name, or pass --reference PATH to "
            "a clean exercise notebook. A notebook is never graded against its own check cells."
        )
    try:
        built = build_exercise(nbformat.read(solution, as_version=4), name=str(solution))
    except ExerciseFormatError as exc:
        raise GradingError(f"cannot build the reference from {solution}: {exc}") from exc
    return built, name, []


def _shipped_reference(notebook: Path, stem: str, root: Path) -> tuple[object, str, list[str]]:
    from nodecourse.course.handout import EXERCISES

    name = _matching(stem, sorted(EXERCISES))
    if name is None:
        raise GradingError(
            f"no reference for {notebook.name!r}: this copy of the course has no solutions/ folder (as handed "
            f"out, {root / 'solutions'} is not there), so the grader uses the exercises shipped with the course, "
            f"and none is named like it (shipped: {sorted(EXERCISES)}); keep the exercise's file name "
            "(nodecourse grade exercises/NN_topic_exercises.ipynb), or pass --reference PATH to a clean "
            "exercise notebook. A notebook is never graded against its own check cells."
        )
    return nbformat.reads(EXERCISES[name], as_version=4), name, []


HANDOUT = Path(__file__).with_name("handout.py")


def shipped_exercises(solutions: Path) -> dict[str, str]:
    """``{file name: the clean exercise as notebook JSON}``, freshly built from every notebook in
    ``solutions`` (what :data:`nodecourse.course.handout.EXERCISES` must hold)."""
    out = {}
    for path in sorted(Path(solutions).glob("*.ipynb")):
        built = build_exercise(nbformat.read(path, as_version=4), name=str(path))
        out[path.name] = nbformat.writes(built)
    return out


def write_handout(solutions: Path | None = None, path: Path = HANDOUT) -> Path:
    """Write :mod:`nodecourse.course.handout` from ``solutions`` (default: the course's): run it
    after changing a solution, as ``nodecourse build`` is run for ``exercises/``."""
    root = find_course_root()
    solutions = Path(solutions) if solutions is not None else (root / "solutions" if root else None)
    if solutions is None or not solutions.is_dir():
        raise GradingError(f"solutions={solutions}: give the folder of the solution notebooks")
    exercises = shipped_exercises(solutions)
    # Raw triple-quoted strings keep the JSON readable in review; the round trip below proves each
    # one reads back exactly (JSON escapes every quote inside a string, so no three quotes meet).
    body = "".join(f'    {json.dumps(name)}: r"""{text}""",\n' for name, text in exercises.items())
    source = _HANDOUT_HEAD + "EXERCISES = {\n" + body + "}\n"
    if _literal_exercises(source) != exercises:
        raise GradingError(
            "the shipped exercises do not read back as written (a raw string broke); write them with repr"
        )
    Path(path).write_text(source, encoding="utf-8")
    return Path(path)


def _literal_exercises(source: str):
    import ast

    tree = ast.parse(source)
    assign = next(node for node in tree.body if isinstance(node, ast.Assign))
    return ast.literal_eval(assign.value)


_HANDOUT_HEAD = '''# ruff: noqa: E501
"""The exercises as handed out, shipped with the package: what a learner's copy of the course (no
solutions/ folder) is graded against (:func:`nodecourse.course.references.reference_for`).

Each value is the clean exercise notebook as JSON, exactly a fresh build of its solution (setup cells,
stub answer cells, check cells; no solution code, no outputs). Written by
:func:`nodecourse.course.references.write_handout`; a test keeps it equal to the build.

Why this module is long: it is generated data, every handed-out exercise notebook as JSON text in one table,
rewritten whole by :func:`~nodecourse.course.references.write_handout` and never edited by hand.
"""

'''


# The gradebook's ``outside_answers`` column and the report's warning: handed-out cells the learner
# edited, which the grader runs as handed out.
OUTSIDE_PREFIX = "handed-out cells edited:"
ADDED_PREFIX = "added cell"  # the id an added cell carries in the notebook the grader runs


def _code_lines(source: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


@dataclass(frozen=True)
class LearnerCells:
    """The code cells of a learner's notebook that are neither answer cells nor handed out unchanged.

    ``added``: ``(learner cell index, index of the handed-out cell it follows, -1 for the start)``
    for each code cell the learner added, in notebook order: the grader runs them where they sit,
    under the answer cells' rules. ``edited``: ``(learner cell index, what the cell is)`` for each
    handed-out setup or check cell whose code the learner changed: the grader runs it as handed out."""

    added: tuple[tuple[int, int], ...] = ()
    edited: tuple[tuple[int, str], ...] = ()


def learner_cells(learner, reference) -> LearnerCells:
    """Which code cells of ``learner`` the learner added and which handed-out cells they edited.

    A cell is handed out when its cell id is one of the exercise's (the exercise builder copies
    the ids of the solution's cells, so the exercise as handed out, the reference and the
    learner's copy share them; JupyterLab gives a new or pasted cell a new id), or when its code
    is exactly a handed-out cell's (a notebook saved without cell ids). Answer cells are told by
    their metadata, as the grader takes them; empty and comment-only cells are nothing to run."""
    ref_ids = {c.get("id"): i for i, c in enumerate(reference.cells) if c.get("id")}
    ref_checks = {check_id(c): i for i, c in enumerate(reference.cells) if check_id(c)}
    ref_answers = {answer_id(c): i for i, c in enumerate(reference.cells) if answer_id(c)}
    by_code = {
        _code_lines(c.source): i
        for i, c in enumerate(reference.cells)
        if c.cell_type == "code" and answer_id(c) is None
    }
    added, edited, seen, anchor = [], [], set(), -1
    for i, cell in enumerate(learner.cells):
        task, cid, key = answer_id(cell), check_id(cell), cell.get("id")
        if task is not None:
            anchor = ref_answers.get(task, anchor)
            continue
        handed = ref_ids.get(key) if key not in seen else None
        seen.add(key)
        if cid is not None and cid in ref_checks:
            handed = ref_checks[cid]
        if handed is not None and answer_id(reference.cells[handed]) is None:
            anchor, original = handed, reference.cells[handed]
            if cell.cell_type == "code" and _code_lines(cell.source) != _code_lines(original.source):
                edited.append((i, f"check {check_id(original)!r}" if check_id(original) else "setup"))
            continue
        lines = _code_lines(cell.source) if cell.cell_type == "code" else ()
        if not lines or cid is not None:  # a copy of a check cell the exercise has not: never the learner's code
            continue
        if lines in by_code:
            anchor = by_code[lines]
            continue
        added.append((i, anchor))
    return LearnerCells(tuple(added), tuple(edited))


def edited_handouts(learner, reference) -> str:
    """A sentence naming the handed-out setup and check cells of ``learner`` whose code was
    changed (the grader runs them as handed out: they set up and check what every answer is
    graded on), or "" when there are none."""
    edited = learner_cells(learner, reference).edited
    if not edited:
        return ""
    names = ", ".join(f"cell {i + 1} ({what})" for i, what in edited[:8]) + (", ..." if len(edited) > 8 else "")
    return (
        f"{names} {'was' if len(edited) == 1 else 'were'} handed out and edited; the grader runs "
        f"{'it' if len(edited) == 1 else 'them'} as handed out (they set up and check what the answers "
        "are graded on), so put your own code in an answer cell or in a cell of your own"
    )


__all__ = [
    "COPY_SUFFIX",
    "GradingError",
    "ADDED_PREFIX",
    "LearnerCells",
    "OUTSIDE_PREFIX",
    "edited_handouts",
    "learner_cells",
    "reference_for",
    "shipped_exercises",
    "write_handout",
]
