"""The notebooks are linted with the code: `make lint` runs `ruff check` over notebooks/, solutions/
and exercises/ as well as the package, and their cells pass it (pyproject.toml's [tool.ruff] says
which files are left out, and why)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from notebook_fixtures import REPO

FOLDERS = ("notebooks", "solutions", "exercises")
RUFF = Path(sys.executable).with_name("ruff")


def test_make_lint_checks_the_notebook_folders():
    lint = re.search(r"^lint:.*\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    check = [line for line in lint.group(1).splitlines() if "ruff check" in line]
    assert check and all(folder in check[0].split() for folder in FOLDERS), check


def test_every_left_out_notebook_exists_and_is_not_a_solution_or_exercise():
    ruff = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["ruff"]
    assert "*.ipynb" in ruff["extend-include"]
    for path in ruff.get("extend-exclude", []):
        assert (REPO / path).is_file(), f"extend-exclude names {path}, which does not exist"
        assert path.startswith("notebooks/"), path  # solutions and exercises are all linted


@pytest.mark.skipif(not RUFF.exists(), reason="ruff is in the test extra")
def test_the_notebooks_pass_ruff_check():
    done = subprocess.run([str(RUFF), "check", *FOLDERS], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
