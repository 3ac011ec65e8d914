"""Who a class submission belongs to, and which exercise it is: the gradebook's documented rule.

:func:`student_id` takes the id from the file name (LMS and JupyterLab copy suffixes
accepted) or from a roster CSV (:func:`read_roster`); :func:`exercise_of` names the
exercise a file's name points at. The README's instructor section states the rule.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Sequence

_SEPARATORS = "-_ ."


class RosterError(ValueError):
    """A roster file that cannot be used (the message names the file and the fix)."""


def student_id(path: str | Path, exercises: Sequence[str], roster: dict[str, str] | None = None) -> str:
    """The student a submission belongs to.

    With a roster, its ``student`` for the file's name (``file`` column). Otherwise the rule is:
    take the file name without ``.ipynb``; drop the suffixes a copy gets (``-Copy1``, `` (1)``,
    ``-1``); drop the exercise's name it ends with (a name in ``exercises``) and the separators
    before it; what is left is the id (``alice-01_resnet_as_euler_exercises (1).ipynb`` is
    ``alice``). A file named exactly as the exercise belongs to its folder's name
    (``alice/01_resnet_as_euler_exercises.ipynb`` is ``alice``)."""
    from nodecourse.course.grading import COPY_SUFFIX

    path = Path(path)
    if roster is not None:
        return roster.get(path.name, "")
    stem = COPY_SUFFIX.sub("", path.stem)
    for name in sorted(exercises, key=len, reverse=True):
        base = name[: -len(".ipynb")] if name.endswith(".ipynb") else name
        if stem == base:
            return path.resolve().parent.name
        if stem.endswith(base) and stem[: -len(base)][-1:] in _SEPARATORS:
            return stem[: -len(base)].rstrip(_SEPARATORS) or path.resolve().parent.name
    return stem


def read_roster(path: str | Path) -> dict[str, str]:
    """``--roster FILE.csv``: columns ``file`` (a submission's file name) and ``student`` (its id)."""
    path = Path(path)
    if not path.is_file():
        raise RosterError(f"--roster {path}: the file does not exist; give a CSV with columns file,student")
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {"file", "student"} <= set(reader.fieldnames):
            raise RosterError(
                f"--roster {path}: its columns are {reader.fieldnames}; it needs 'file' "
                "(a submission's file name) and 'student' (its id)"
            )
        roster = {}
        for row in reader:
            name, sid = (row.get("file") or "").strip(), (row.get("student") or "").strip()
            if name and sid:
                roster[Path(name).name] = sid
    return roster


def exercise_names(near: Sequence[str | Path] = ()) -> list[str]:
    """The exercises' file names: ``solutions/*.ipynb`` of the course found from the folder of a path
    in ``near`` (a submission), else from the current directory (as the grader finds its reference)."""
    from nodecourse.course.paths import find_course_root

    root = (
        next((r for r in (find_course_root(Path(n).resolve().parent) for n in near[:1]) if r), None)
        or find_course_root()
    )
    return sorted(p.name for p in (root / "solutions").glob("*.ipynb")) if root else []


def exercise_of(nb: str, names: Sequence[str]) -> str:
    """The exercise file a submission's name points at ("" when none does)."""
    from nodecourse.course.grading import COPY_SUFFIX

    stem = COPY_SUFFIX.sub("", Path(nb).stem)
    for name in sorted(names, key=len, reverse=True):
        base = name[: -len(".ipynb")]
        if stem == base or (stem.endswith(base) and stem[: -len(base)][-1:] in _SEPARATORS):
            return name
    return ""
