"""The feedback file of one student: the score, every check with its points, reason and likely cause.

Written by the gradebook beside its CSV (``grades-feedback/<slug>-<hash>.md``,
:func:`feedback_name`), one section per exercise. Each section starts with the
score and each check's points, names cells by the heading they sit under (or
their task), and gives a long reason or error whole, folded in ``<details>``.
A new grade replaces its exercise's section whole, whatever that section said
before (a "could not be graded" section included).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

_SAFE_NAME = re.compile(r"[^a-z0-9]+")
_HASH_CHARS = 12  # 48 bits: a collision in a class is vanishingly unlikely, and is detected anyway
UNISOLATED = "graded WITHOUT isolation"
LIMITS_NOTE = "limits hit: "
"""The start of the grader's note that names the limits on the whole submission its code went over
(here, so that the gradebook reads it without importing the grader)."""
ERROR_LIMIT = 20_000
"""Characters an error may keep: any message a grading writes, whole; only a runaway one is cut (at a word)."""
_FOLD_AT = 160  # a reason longer than this is folded: its first words shown, the whole text under them
_CELL = re.compile(r"^cell (\d+)$")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")


def feedback_name(student: str, hash_chars: int = _HASH_CHARS) -> str:
    """The feedback file name of ``student``: a readable ASCII slug, then a hash of the exact id.

    The slug is the id with accents dropped (NFKD), lower-cased, every run of other characters a
    ``_`` (at most 40 characters, ``student`` when nothing is left): ``José Ruiz`` -> ``jose_ruiz``.
    The hash is the first ``hash_chars`` hex digits of SHA-256 of the id exactly as the gradebook
    keys it (UTF-8, not normalised: two ids that are two rows in the CSV are two files), so ids
    differing only in accents, script, spaces against underscores, or case get different names;
    the name is all lower case, so a case-insensitive filesystem (macOS, Windows) keeps them apart too.
    """
    ascii_text = unicodedata.normalize("NFKD", student).encode("ascii", "ignore").decode("ascii")
    slug = _SAFE_NAME.sub("_", ascii_text.lower()).strip("_")[:40].strip("_") or "student"
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()[:hash_chars]
    return f"{slug}-{digest}.md"


def shorten(text: str, limit: int) -> str:
    """``text`` whole when it has at most ``limit`` characters, else cut at the last space before
    the limit (never inside a word, unless one word is longer than it) and ended with "…"."""
    if len(text) <= limit:
        return text
    cut = text[: max(1, limit - 1)]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def cell_titles(nb) -> dict[str, str]:
    """What to call each code cell of an exercise notebook (``nb``, nbformat), by its number among
    the code cells (as a string, the grade's ``cell N``) and, for a check cell, by its check id: the
    nearest markdown heading above it, e.g. ``Task 1: one Euler step``; "the setup code" for cells
    above every heading."""
    from nodecourse.course.exercise_builder import check_id

    titles: dict[str, str] = {}
    heading, number = "", 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            found = [m[1] for m in map(_HEADING.match, cell.source.splitlines()) if m]
            heading = found[-1] if found else heading
        elif cell.cell_type == "code":
            titles[str(number)] = heading or "the setup code"
            if check_id(cell):
                titles[check_id(cell)] = titles[str(number)]
            number += 1
    return titles


def _fold(text: str) -> str:
    """A reason for a Markdown table cell: whole, and folded when long (first words, then all of it)."""
    from nodecourse.course.textsafe import escape

    text = escape(text).replace("|", "\\|")
    if len(text) <= _FOLD_AT:
        return text
    return f"<details><summary>{shorten(text, _FOLD_AT)}</summary>{text}</details>"


def _points(value: float) -> str:
    return f"{value:g}"


def feedback_markdown(student: str, result: dict) -> str:
    """The feedback for one student and exercise: the score and each check's points at the top, then
    every check with its reason, the warnings, the seed."""
    from nodecourse.course.textsafe import escape

    rows = result["rows"]
    exercise = result.get("exercise") or (rows[0]["exercise"] if rows else "(no exercise)")
    titles = result.get("cell_titles", {})
    lines = [f"## {escape(exercise)}", ""]
    checks = [r for r in rows if not r["check"].startswith(("(", "cell ", "answer "))]
    if result["error"]:
        lines += ["**Score: not graded** (the grader could not grade this submission: see below)", ""]
    else:
        got = sum(float(r.get("weight", 1.0)) for r in checks if r["passed"])
        top = sum(float(r.get("weight", 1.0)) for r in checks)
        percent = f" ({100 * got / top:.0f}%)" if top else ""
        lines += [f"**Score: {_points(got)} / {_points(top)} points{percent}**", ""]
        if result.get("override"):
            lines += [f"Your instructor set this exercise's points to **{escape(result['override'])}**.", ""]
        for r in checks:
            weight = float(r.get("weight", 1.0))
            task = f" ({escape(titles[r['check']])})" if titles.get(r["check"]) else ""
            lines.append(f"- {escape(r['check'])}{task}: {_points(weight if r['passed'] else 0)} / {_points(weight)}")
        lines.append("")
    lines += [
        f"- seed: {result['seed']} (regrade with `nodecourse grade NOTEBOOK "
        f"--seed {result['seed']}` to run the same inputs)"
    ]
    if result.get("unisolated"):
        lines += [f"- {UNISOLATED}: {escape(result['unisolated'])}"]
    if result["error"]:
        lines += [f"- could not be graded: {_fold(result['error'])}"]
    shown = [r for r in rows if not r["check"].startswith("(")]
    if shown:
        lines += ["", "| check | result | why |", "|---|---|---|"]
        for r in shown:
            lines.append(
                f"| {_name(r['check'], titles)} | {'pass' if r['passed'] else 'FAIL'} | {_fold(r['reason'])} |"
            )
    warnings = [w for w in result.get("warnings", []) if not w.startswith("note: ")]
    if warnings:
        lines += ["", "Warnings:"] + [f"- {_fold(w)}" for w in warnings]
    return "\n".join(lines) + "\n"


def _name(check: str, titles: dict[str, str]) -> str:
    """A row's name as a learner finds it: ``cell N`` becomes the heading the cell is under."""
    from nodecourse.course.textsafe import escape

    match = _CELL.match(check)
    if match:
        title = titles.get(match[1])
        return f"a code cell under “{escape(title)}”" if title else f"code cell {int(match[1]) + 1}"
    return escape(check)


def write_feedback(folder: Path, student: str, result: dict) -> Path:
    """``folder/<feedback_name(student)>``, one section per exercise: a new grade replaces its
    exercise's section whole (nothing of an older grade stays above it). The file's first line names
    the id; should a short hash ever collide with another id's file, the full SHA-256 names this one
    instead, so no student's file is written over."""
    folder.mkdir(exist_ok=True)
    title = f"# Feedback for {_title(student)}\n"
    path = folder / feedback_name(student)
    if path.exists() and not path.read_text(encoding="utf-8").startswith(title):
        path = folder / feedback_name(student, 64)
    section = feedback_markdown(student, result)
    marker = section.splitlines()[0]
    parts = path.read_text(encoding="utf-8").split("\n\n<!-- exercise -->\n") if path.exists() else []
    parts = [p for p in parts[1:] if p.splitlines() and p.splitlines()[0] not in (marker, "## (no exercise)")]
    parts = sorted(parts + [section])
    path.write_text(title + "".join(f"\n\n<!-- exercise -->\n{p}" for p in parts), encoding="utf-8")
    return path


def _title(student: str) -> str:
    """The id as the file's first line shows it (control characters escaped: one line, always)."""
    from nodecourse.course.textsafe import escape

    return escape(student, 600)
