"""The feedback file of one student: every check with its reason and likely cause, the warnings, the seed.

Written by the gradebook beside its CSV (``grades-feedback/<slug>-<hash>.md``,
:func:`feedback_name`), one section per exercise; a regrade replaces its
exercise's section only.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from pathlib import Path

_SAFE_NAME = re.compile(r"[^a-z0-9]+")
_HASH_CHARS = 12  # 48 bits: a collision in a class is vanishingly unlikely, and is detected anyway
UNISOLATED = "graded WITHOUT isolation"


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


def feedback_markdown(student: str, result: dict) -> str:
    """The feedback for one student and exercise: every check with its reason, warnings, the seed."""
    from nodecourse.course.grading_run import REASON_LIMIT
    from nodecourse.course.textsafe import escape

    rows = result["rows"]
    exercise = rows[0]["exercise"] if rows else "(no exercise)"
    lines = [
        f"## {escape(exercise)}",
        "",
        f"- seed: {result['seed']} (regrade with `nodecourse grade NOTEBOOK "
        f"--seed {result['seed']}` to run the same inputs)",
    ]
    if result.get("unisolated"):
        lines += [f"- {UNISOLATED}: {escape(result['unisolated'], 600)}"]
    if result["error"]:
        lines += [f"- could not be graded: {escape(result['error'], 600)}"]
    checks = [r for r in rows if not r["check"].startswith("(")]
    if checks:
        lines += ["", "| check | result | why |", "|---|---|---|"]
        for r in checks:
            why = escape(r["reason"], REASON_LIMIT).replace("|", "\\|")
            lines.append(f"| {escape(r['check'])} | {'pass' if r['passed'] else 'FAIL'} | {why} |")
    warnings = [w for w in result.get("warnings", []) if not w.startswith("note: ")]
    if warnings:
        lines += ["", "Warnings:"] + [f"- {escape(w, 600)}" for w in warnings]
    return "\n".join(lines) + "\n"


def write_feedback(folder: Path, student: str, result: dict) -> Path:
    """``folder/<feedback_name(student)>``, one section per exercise (a regrade replaces its section
    only). The file's first line names the id; should a short hash ever collide with another id's
    file, the full SHA-256 names this one instead, so no student's file is written over."""
    folder.mkdir(exist_ok=True)
    title = f"# Feedback for {_title(student)}\n"
    path = folder / feedback_name(student)
    if path.exists() and not path.read_text(encoding="utf-8").startswith(title):
        path = folder / feedback_name(student, 64)
    section = feedback_markdown(student, result)
    marker = section.splitlines()[0]
    parts = path.read_text(encoding="utf-8").split("\n\n<!-- exercise -->\n") if path.exists() else []
    parts = [p for p in parts[1:] if p.splitlines() and p.splitlines()[0] != marker]
    parts = sorted(parts + [section])
    path.write_text(title + "".join(f"\n\n<!-- exercise -->\n{p}" for p in parts), encoding="utf-8")
    return path


def _title(student: str) -> str:
    """The id as the file's first line shows it (control characters escaped: one line, always)."""
    from nodecourse.course.textsafe import escape

    return escape(student, 600)
