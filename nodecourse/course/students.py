"""Who a class submission belongs to, and which exercise it is: the gradebook's documented rule.

:func:`student_id` takes the id from the file name (LMS download patterns, JupyterLab
copy suffixes), from the folder a file sits in on a shared server, or from a roster CSV
(:func:`read_roster`); :func:`exercise_of` names the exercise a file's name points at;
:func:`submitted_at` says when it was submitted (to pick the newest of a student's
files). Names are compared in Unicode NFC, so a decomposed name (as macOS's unzip
writes it) is the same student as the composed one in a roster. docs/instructor.md
states the rule.
"""

from __future__ import annotations

import csv
import datetime
import difflib
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

_SEPARATORS = "-_ ."
# The suffixes a copy of a file gets (JupyterLab's "-Copy1", a browser's " (1)", an LMS's "-1"): the
# grader's rule (nodecourse.course.references.COPY_SUFFIX), spelled out so that reading a class's file
# names imports no notebook library (a test keeps the two equal).
COPY_SUFFIX = re.compile(r"(?:-Copy\d+|\s*\(\d+\)|-\d+)+$")

COURSE_FOLDERS = frozenset({"exercises", "solutions", "notebooks", "lessons", "submissions", "submitted", "course"})
"""Folder names that never name a student: the course's own folders (and the usual collection folders).
A file directly under one of them belongs to the nearest folder above that is neither one of these
nor a copy of the course (a folder holding ``exercises/`` or ``notebooks/``)."""


@dataclass(frozen=True)
class LmsName:
    """What an LMS download name says: the student, the file the student uploaded, when (or None)."""

    lms: str
    student: str
    original: str  # the uploaded file's name, as the LMS kept it
    submitted: datetime.datetime | None = None  # UTC, when the name carries it (Blackboard)


# One pattern per LMS's bulk-download name (docs/instructor.md lists them with examples).
#   Canvas:     <lastfirst>_<user id>_<attachment id>_<file>, late ones <lastfirst>_LATE_<user id>_...
#   Moodle:     <Full Name>_<participant id>_assignsubmission_file_<file>
#   Blackboard: <assignment>_<username>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>
_CANVAS = re.compile(r"^(?P<student>[^_]+)_(?:LATE_)?\d+_\d+_(?P<original>.+)$")
_MOODLE = re.compile(r"^(?P<student>.+?)_\d+_assignsubmission_(?:file|onlinetext)_(?P<original>.+)$")
_BLACKBOARD = re.compile(
    r"^.*?_(?P<student>[^_]+)_attempt_(?P<when>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<original>.+))?$"
)


class RosterError(ValueError):
    """A roster file that cannot be used (the message names the file and the fix)."""


def nfc(text: str) -> str:
    """``text`` in Unicode NFC: the form ids are compared and kept in."""
    return unicodedata.normalize("NFC", text)


def lms_name(name: str) -> LmsName | None:
    """The LMS download pattern ``name`` (a file name) matches, Moodle's and Blackboard's first (their
    markers are explicit), then Canvas's; None when it matches none."""
    name = nfc(Path(name).name)
    match = _MOODLE.match(name)
    if match:
        return LmsName("moodle", match["student"], match["original"])
    match = _BLACKBOARD.match(name)
    if match:
        when = datetime.datetime.strptime(match["when"], "%Y-%m-%d-%H-%M-%S").replace(tzinfo=datetime.timezone.utc)
        return LmsName("blackboard", match["student"], match["original"] or name, when)
    match = _CANVAS.match(name)
    if match:
        return LmsName("canvas", match["student"], match["original"])
    return None


def _owner_folder(path: Path) -> str:
    """The nearest folder above ``path`` that is not a course folder (:data:`COURSE_FOLDERS`) nor a
    copy of the course; the file's own folder when every one above is."""
    path = Path(os.path.abspath(path))  # ".." folded, links kept: the folder the file was given in
    for folder in path.parents:
        if not folder.name:
            break
        if folder.name.lower() in COURSE_FOLDERS or (folder / "exercises").is_dir() or (folder / "notebooks").is_dir():
            continue
        return nfc(folder.name)
    return nfc(path.parent.name)


def student_id(path: str | Path, exercises: Sequence[str], roster: dict[str, str] | None = None) -> str:
    """The student a submission belongs to (in NFC).

    With a roster, its ``student`` for the file's name, or for the id the rule below gives
    (``file`` column; "" when neither is there). Otherwise:

    1. an LMS download name gives the LMS's student part (:func:`lms_name`: Canvas
       ``smithalice_1001_50001_02_....ipynb`` and ``smithalice_LATE_...`` are ``smithalice``;
       Moodle ``Erin Davis_22223_assignsubmission_file_...`` is ``Erin Davis``; Blackboard
       ``Assignment_username_attempt_2026-..._file.ipynb`` is ``username``);
    2. else the file name without ``.ipynb`` and the suffixes a copy gets (``-Copy1``, `` (1)``,
       ``-1``), less the exercise's name it ends with and the separators before it
       (``alice-01_resnet_as_euler_exercises (1).ipynb`` is ``alice``);
    3. a file named exactly as the exercise belongs to the nearest folder above it that is not one
       of the course's folders (:data:`COURSE_FOLDERS`) nor a copy of the course:
       ``/home/alice/nodecourse/exercises/01_resnet_as_euler_exercises.ipynb`` is ``alice``.
    """
    path = Path(nfc(str(path)))
    lms = lms_name(path.name)
    if lms is not None:
        sid = lms.student
    else:
        stem = COPY_SUFFIX.sub("", path.stem)
        sid = stem
        for name in sorted(exercises, key=len, reverse=True):
            base = nfc(name[: -len(".ipynb")] if name.endswith(".ipynb") else name)
            if stem == base:
                sid = _owner_folder(path)
                break
            if stem.endswith(base) and stem[: -len(base)][-1:] in _SEPARATORS:
                sid = stem[: -len(base)].rstrip(_SEPARATORS) or _owner_folder(path)
                break
    if roster is not None:
        return roster.get(path.name) or roster.get(sid, "")
    return sid


def submitted_at(path: str | Path) -> float:
    """When ``path`` was submitted, as a POSIX time: the LMS's timestamp when its name has one
    (Blackboard), else the file's modification time."""
    lms = lms_name(Path(path).name)
    if lms is not None and lms.submitted is not None:
        return lms.submitted.timestamp()
    return Path(path).stat().st_mtime


def close_matches(name: str, known) -> str:
    """The ids in ``known`` that look like ``name`` (difflib, case-blind), as text for a message."""
    lowered = {k.lower(): k for k in known}
    found = difflib.get_close_matches(nfc(name).lower(), sorted(lowered), n=3, cutoff=0.6)
    return ", ".join(repr(lowered[f]) for f in found) or "none close"


def read_roster(path: str | Path) -> dict[str, str]:
    """``--roster FILE.csv``: columns ``file`` (a submission's file name, or the id the file-name rule
    gives) and ``student`` (its id). Read with or without a byte-order mark; names in NFC."""
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
            name, sid = nfc((row.get("file") or "").strip()), nfc((row.get("student") or "").strip())
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
    stem = COPY_SUFFIX.sub("", nfc(Path(nb).stem))
    for name in sorted(names, key=len, reverse=True):
        base = nfc(name[: -len(".ipynb")])
        if stem == base or (stem.endswith(base) and stem[: -len(base)][-1:] in _SEPARATORS):
            return name
    return ""
