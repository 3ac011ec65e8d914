"""CONTRIBUTING.md names only paths that exist: each path it writes in backticks (from the repository
root, or inside the package as the layout table writes them: `lessons/`, `course/`) is a file or
folder of the tree, so the guide cannot keep pointing at a module that was moved or removed."""

from __future__ import annotations

import re

from notebook_fixtures import REPO

_TOP = "nodecourse|lessons|course|claims|audit|tests|scripts|notebooks|solutions|exercises|docs|benchmarks|binder"
_PATH = re.compile(rf"`((?:{_TOP})/[^`\s]*)`")
_PLACEHOLDER = re.compile(r"NN|\*|<|\{|\.\.\.")


def test_every_path_contributing_names_exists():
    text = (REPO / "CONTRIBUTING.md").read_text()
    named = {m for m in _PATH.findall(text) if not _PLACEHOLDER.search(m)}
    assert len(named) > 10, sorted(named)  # the guide names its paths this way
    missing = [p for p in sorted(named) if not (REPO / p).exists() and not (REPO / "nodecourse" / p).exists()]
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"
