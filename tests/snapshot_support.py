"""One snapshot per ``markdown()``: a findings test asserts typed fields (verdicts, numbers, counts),
and the words a learner reads are kept whole in ``tests/snapshots/<name>.md``, compared in full.

A change to a findings text then shows as one reviewable diff of the snapshot file, instead of
failing a literal sentence copied into an assert. ``NODECOURSE_UPDATE_SNAPSHOTS=1`` (re)writes the
snapshots a run reaches; read ``git diff tests/snapshots`` before committing them. A snapshot that
does not exist fails the test (never written silently), so a missing file cannot pass in CI.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = "NODECOURSE_UPDATE_SNAPSHOTS"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")


def assert_snapshot(name: str, text: str) -> None:
    """``text`` equals ``tests/snapshots/<name>.md`` (``name``: lower case, digits, ``_.-``; prefix it
    with the lesson, e.g. ``lesson03.annulus-holds``). With ``NODECOURSE_UPDATE_SNAPSHOTS=1`` the
    file is written instead."""
    if not _NAME.match(name):
        raise ValueError(f"snapshot name={name!r}: use lower case letters, digits, '_', '.', '-'")
    if not isinstance(text, str):
        raise TypeError(f"a snapshot holds text, got {type(text).__name__}; pass findings.markdown()")
    path = SNAPSHOTS / f"{name}.md"
    if os.environ.get(UPDATE) == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.is_file():
        raise AssertionError(
            f"no snapshot {path.name} in tests/snapshots: run this test with {UPDATE}=1 once and commit it"
        )
    kept = path.read_text(encoding="utf-8")
    if text != kept:
        diff = "".join(
            difflib.unified_diff(
                kept.splitlines(keepends=True), text.splitlines(keepends=True), f"snapshot {path.name}", "now"
            )
        )
        raise AssertionError(f"markdown() differs from its snapshot ({UPDATE}=1 rewrites it after review):\n{diff}")
