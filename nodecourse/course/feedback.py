"""The feedback file of one student: every check with its reason and likely cause, the warnings, the seed.

Written by the gradebook beside its CSV (``grades-feedback/<student>.md``), one
section per exercise; a regrade replaces its exercise's section only.
"""

from __future__ import annotations

import re
from pathlib import Path

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


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
    """``folder/<student>.md``, one section per exercise (a regrade replaces its section only)."""
    folder.mkdir(exist_ok=True)
    path = folder / f"{_SAFE_NAME.sub('_', student).strip('.') or 'student'}.md"
    section = feedback_markdown(student, result)
    marker = section.splitlines()[0]
    parts = path.read_text(encoding="utf-8").split("\n\n<!-- exercise -->\n") if path.exists() else []
    parts = [p for p in parts[1:] if p.splitlines() and p.splitlines()[0] != marker]
    parts = sorted(parts + [section])
    path.write_text(
        f"# Feedback for {student}\n" + "".join(f"\n\n<!-- exercise -->\n{p}" for p in parts), encoding="utf-8"
    )
    return path
