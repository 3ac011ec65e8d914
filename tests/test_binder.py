"""The Binder environment: a fresh virtualenv built from binder/requirements.txt
alone runs the environment check and grades a solution notebook.

This is what repo2docker does on Binder (install binder/requirements.txt from
the repository root). It catches a dependency that the notebooks need but the
package does not declare, a version that strays from the lock (constraints.txt)
and a test-only tool that the course's install would bring. It takes minutes,
so it is marked slow and binder.

Where PyTorch's CPU index is unreachable (offline CI), pip falls back to the
other indexes and find-links it is configured with; ``PIP_RETRIES=0`` keeps it
from retrying the unreachable index for every package (which would take
many minutes), without changing what is installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from packaging.utils import canonicalize_name
from packaging.version import Version
from test_packaging import locked_versions, packages_only_tests_need

from notebook_fixtures import REPO

SOLUTIONS = sorted((REPO / "solutions").glob("*.ipynb"))
INSTALL_TIMEOUT_S = 1500

pytestmark = [pytest.mark.slow, pytest.mark.binder, pytest.mark.timeout(2400)]


def test_fresh_binder_environment_grades_a_solution(tmp_path):
    if not SOLUTIONS:
        pytest.skip("no solution notebook in solutions/ yet")
    venv = tmp_path / "binder-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update({"PIP_RETRIES": "0", "OMP_NUM_THREADS": "1"})
    install = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "-q",
            # no .pyc for every module installed (tens of seconds of CPU): what is installed is the
            # same; the modules the check and the grade import compile as they load (in the grader's
            # read-only sandbox on every load, which one graded solution pays less for)
            "--no-compile",
            "-r",
            str(REPO / "binder" / "requirements.txt"),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    _assert_installed_the_lock(python, env)

    check = subprocess.run(
        [str(venv / "bin" / "nodecourse"), "check"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert "torch" in check.stdout and "widget manager" in check.stdout

    solution = SOLUTIONS[0]
    grade = subprocess.run(
        [
            str(venv / "bin" / "nodecourse"),
            "grade",
            str(solution.relative_to(REPO)),
            "--seed",
            "7",
        ],  # a fixed seed: CI never fails on a draw
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert grade.returncode == 0, grade.stdout + grade.stderr
    assert "checks pass" in grade.stdout


def _assert_installed_the_lock(python, env) -> None:
    """Every package the Binder install brought is at its locked version; none is outside the lock
    or only for the tests."""
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    installed = {canonicalize_name(p["name"]): Version(p["version"]).public for p in json.loads(listed)}
    lock = locked_versions()
    drift = {n: f"installed {v}, locked {lock[n]}" for n, v in installed.items() if n in lock and v != lock[n]}
    assert not drift, f"Binder installed versions other than the lock's: {drift}"
    unlocked = set(installed) - set(lock) - {"pip", "nodecourse"}
    assert not unlocked, f"Binder installed packages the lock does not pin: {sorted(unlocked)}"
    test_only = set(installed) & packages_only_tests_need()
    assert not test_only, f"Binder installed test-only tools: {sorted(test_only)}"
