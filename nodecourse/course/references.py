"""What a learner's notebook is graded against, and which of its code the grader runs.

:func:`reference_for` builds the clean exercise a notebook is graded against from
``solutions/``; :func:`code_outside_answers` names the code cells the grader will not run. Both
read notebooks only, so the notebook's own self-check (:func:`nodecourse.course.tasks.self_check`)
can say what the grader will say without importing the grader.
"""

from __future__ import annotations

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


def reference_for(notebook: Path, course_root: Path | None = None) -> tuple[object, str, list[str]]:
    """The clean exercise that ``notebook`` is graded against: ``(notebook, file name, warnings)``.

    Always a fresh build of ``solutions/<same name>.ipynb`` (or of the one solution whose
    name the notebook's name ends with, after a ``-``, ``_``, space or dot: a class's
    ``alice-01_..._exercises.ipynb``; JupyterLab's ``-Copy1`` is ignored): a learner works
    *in* ``exercises/``, so nothing there is trusted. Without that solution
    there is no reference, and :class:`GradingError` says so (pass
    ``--reference`` to grade against an exercise you trust).
    """
    root = course_root or find_course_root(notebook.parent) or find_course_root()
    if root is None:
        raise GradingError(
            f"cannot find the course root (a folder with notebooks/ and solutions/) from "
            f"{notebook.parent} or the current directory; run from the course folder or "
            "pass --reference PATH (a clean exercise notebook)"
        )
    stem = COPY_SUFFIX.sub("", notebook.stem)
    name = stem + ".ipynb"
    solution = root / "solutions" / name
    available = sorted(p.name for p in (root / "solutions").glob("*.ipynb"))
    if not solution.is_file():
        # A class's files are often named after the learner: "alice-01_..._exercises.ipynb".
        ends = [
            n
            for n in available
            if stem.endswith(n[: -len(".ipynb")])
            and stem[: len(stem) - len(n) + len(".ipynb")][-1:] in ("-", "_", " ", ".")
        ]
        if len(ends) == 1:
            name, solution = ends[0], root / "solutions" / ends[0]
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


__all__ = ["COPY_SUFFIX", "GradingError", "OUTSIDE_PREFIX", "code_outside_answers", "reference_for"]
