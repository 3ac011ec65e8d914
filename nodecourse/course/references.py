"""What a learner's notebook is graded against, and which of its code the grader runs.

:func:`reference_for` builds the clean exercise a notebook is graded against from
``solutions/``, or, in a copy of the course as handed out (no ``solutions/``), takes it from the
exercises shipped with the package (:mod:`nodecourse.course.handout`: the clean exercises, stub answer
cells and all, nothing of the solutions); :func:`code_outside_answers` names the code cells the grader
will not run. Both read notebooks only, so the notebook's own self-check
(:func:`nodecourse.course.tasks.self_check`) can say what the grader will say without importing the
grader. :func:`write_handout` writes the shipped exercises from ``solutions/`` (after a solution changed).
"""

from __future__ import annotations

import json
import re
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
"""

'''


OUTSIDE_PREFIX = "code outside the answer cells:"


def _code_lines(source: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in source.splitlines() if line.strip() and not line.strip().startswith("#"))


def code_outside_answers(learner, reference) -> str:
    """A sentence when ``learner`` has code cells that are neither answer cells nor the reference's
    own cells (a solution typed into a new cell, a helper in an extra cell): the grader runs only
    the answer cells, so that code is not graded. "" when there are none."""
    known = {_code_lines(c.source) for c in reference.cells if c.cell_type == "code"}
    # Check cells are the reference's (an edit there is ignored, not work to keep): only other cells count.
    extra = [
        i
        for i, c in enumerate(learner.cells)
        if c.cell_type == "code"
        and answer_id(c) is None
        and check_id(c) is None
        and _code_lines(c.source)
        and _code_lines(c.source) not in known
    ]
    if not extra:
        return ""
    return (
        f"{len(extra)} code cell(s) (cell {', '.join(str(i + 1) for i in extra[:8])}"
        f"{', ...' if len(extra) > 8 else ''}) are not answer cells and are not graded; the grader runs only "
        "the answer cells (the ones with a 'your answer' stub), so move that code into them"
    )


__all__ = [
    "COPY_SUFFIX",
    "GradingError",
    "OUTSIDE_PREFIX",
    "code_outside_answers",
    "reference_for",
    "shipped_exercises",
    "write_handout",
]
