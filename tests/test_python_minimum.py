"""One Python minimum everywhere: pyproject.toml's requires-python, the README's set-up line, binder's
runtime, the environment check and the lock all name Python 3.11 (the library uses ``err.add_note``,
new in 3.11); the README's patch level is the lock's (a pinned package may need a later 3.11.x)."""

from __future__ import annotations

import re
import tomllib

from notebook_fixtures import REPO


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


def _minimums() -> dict[str, tuple[int, ...]]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    found = {"pyproject.toml": _version(re.fullmatch(r">=\s*([\d.]+)", project["requires-python"]).group(1))}
    readme = re.search(r"with Python (\d+\.\d+) or newer \((\d+\.\d+\.\d+) or newer", (REPO / "README.md").read_text())
    assert readme, "README's set-up line no longer says 'with Python X.Y or newer (X.Y.Z or newer ...'"
    found["README.md"], found["README.md (pinned)"] = _version(readme.group(1)), _version(readme.group(2))
    runtime = (REPO / "binder" / "runtime.txt").read_text().strip()
    found["binder/runtime.txt"] = _version(re.fullmatch(r"python-([\d.]+)", runtime).group(1))
    envcheck = (REPO / "nodecourse" / "course" / "envcheck.py").read_text()
    found["envcheck.py"] = tuple(int(p) for p in re.search(r"sys\.version_info >= \((\d+), (\d+)\)", envcheck).groups())
    lock = re.search(r"^# requires-python: >=([\d.]+)$", (REPO / "constraints.txt").read_text(), re.M)
    found["constraints.txt"] = _version(lock.group(1))
    return found


def test_every_place_names_the_same_python_minimum():
    found = _minimums()
    minors = {where: v[:2] for where, v in found.items()}
    assert set(minors.values()) == {(3, 11)}, minors
    # the README's pinned-install version is the lock's own minimum, not a guess
    assert found["README.md (pinned)"] == found["constraints.txt"], found


def test_the_library_really_needs_3_11():
    # the reason for the minimum: exception notes (PEP 678) are used by the library's errors
    sources = "".join(p.read_text() for p in (REPO / "nodecourse").rglob("*.py"))
    assert ".add_note(" in sources
