"""Packaging facts written once: the torch version, the package version, the licence."""
from __future__ import annotations

import re
import subprocess
import tomllib
from importlib import metadata

import nodecourse
from notebook_fixtures import REPO

TORCH_PIN = re.compile(r"torch\s*(==|>=|~=)\s*\d")


def _torch_version_from_constraints() -> str:
    pins = re.findall(r"^torch==([0-9.]+)\s*$", (REPO / "constraints.txt").read_text(), re.M)
    assert len(pins) == 1, "constraints.txt must pin torch exactly once"
    return pins[0]


def test_torch_version_is_written_only_in_constraints():
    version = _torch_version_from_constraints()
    readers = {
        "scripts/setup_env.sh": (REPO / "scripts" / "setup_env.sh").read_text(),
        "binder/requirements.txt": (REPO / "binder" / "requirements.txt").read_text(),
    }
    for name, text in readers.items():
        assert version not in text, f"{name} repeats the torch version; read constraints.txt instead"
        assert "constraints.txt" in text, f"{name} does not read constraints.txt"
    assert "-c ../constraints.txt" in readers["binder/requirements.txt"]


def test_setup_script_reads_the_version_it_installs():
    # The same sed expression the script runs, on the real file.
    line = next(l for l in (REPO / "scripts" / "setup_env.sh").read_text().splitlines()
                if l.startswith("TORCH_VERSION="))
    out = subprocess.run(["bash", "-c", line + '; echo "$TORCH_VERSION"'], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == _torch_version_from_constraints()


def test_version_is_defined_once():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert metadata.version("nodecourse") == nodecourse.__version__


def test_licence_file_matches_pyproject():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"]["text"] == "MIT"
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_every_test_dependency_is_used():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    used_by = {"pytest-timeout": "timeout", "torchode": "torchode", "torchdeq": "torchdeq",
               "playwright": "playwright"}
    sources = "\n".join(p.read_text() for p in [*REPO.glob("tests/*.py"), *REPO.glob("benchmarks/*.py"),
                                                 REPO / "pyproject.toml"])
    for req in project["optional-dependencies"]["test"]:
        name = re.split(r"[<>=~ ]", req)[0]
        assert name in used_by, f"test dependency {name} is not known to this test; add where it is used"
        assert used_by[name] in sources, f"test dependency {name} is used nowhere"
