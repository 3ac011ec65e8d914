"""Per-test time limits (a short default, longer ones for the slow tiers), the check that every
subprocess a test starts has a timeout inside that limit, the worker count of ``pytest -n auto``, and one
folder of study results for the whole run (``NODECOURSE_STUDY_CACHE``).

pytest-timeout only stops a hang; no test asserts on wall-clock time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

DEFAULT_TIMEOUT_S = 120
TIER_TIMEOUT_S = {"slow": 900, "browser": 1200, "binder": 1800}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        limits = [s for name, s in TIER_TIMEOUT_S.items() if item.get_closest_marker(name)]
        item.add_marker(pytest.mark.timeout(max(limits, default=DEFAULT_TIMEOUT_S)))


def pytest_configure(config):
    """One folder of study results for the run (``NODECOURSE_STUDY_CACHE``, nodecourse/lessons/study.py),
    made by the controller before pytest-xdist starts its workers: the workers, and the kernels and
    subprocesses they start (``notebook_fixtures.SUBPROCESS_ENV`` copies the environment), inherit it,
    so a study trains once per run, not once per process. A variable already set is kept: a folder to
    reuse, or empty to turn the layer off (``NODECOURSE_STUDY_CACHE= pytest ...``)."""
    from nodecourse.lessons.study import CACHE_ENV

    if hasattr(config, "workerinput") or CACHE_ENV in os.environ:
        return
    config.study_cache_folder = tempfile.mkdtemp(prefix="nodecourse-studies-")
    os.environ[CACHE_ENV] = config.study_cache_folder


def pytest_unconfigure(config):
    folder = getattr(config, "study_cache_folder", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def torch_defaults():
    """An exercise's setup cell sets torch's default dtype (as its own kernel would): undo it after."""
    import torch

    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    yield
    torch.set_default_dtype(before)


def pytest_xdist_auto_num_workers(config):
    """``pytest -n auto`` (``make test-fast``): one worker per CPU this process may keep busy, counted
    as the course counts them (affinity capped by the container's cgroup quota), not the cores the
    machine has: on Binder or CI those are many more than the quota lets the workers use."""
    from nodecourse.config import usable_cpus

    return usable_cpus()[0]


#: Seconds a subprocess started by a test must leave before the test's own limit, so that its
#: ``TimeoutExpired`` (with the command and its output) is what a hang reports, not pytest-timeout's
#: stack dump of the waiting test.
SUBPROCESS_MARGIN_S = 15
TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
#: The limit of the test running in this process (set by the fixture below).
running_test_limit_s: float | None = None


def subprocess_timeout() -> float:
    """The timeout a helper gives a subprocess when its caller names none: the running test's limit
    less :data:`SUBPROCESS_MARGIN_S`."""
    return (running_test_limit_s or DEFAULT_TIMEOUT_S) - SUBPROCESS_MARGIN_S


@pytest.fixture(autouse=True)
def subprocess_timeouts_fit_the_test(request, monkeypatch):
    """Every ``subprocess.run`` called from the tests' code (a test, or a helper in ``tests/``) must give a
    ``timeout`` at least :data:`SUBPROCESS_MARGIN_S` below the test's own limit (the ``timeout`` marker set
    above): a wait longer than the test may take is a limit that can never fire. Calls from the library
    pass through unchecked."""
    marker = request.node.get_closest_marker("timeout")
    if marker is None or not marker.args:
        return
    limit = marker.args[0]
    monkeypatch.setattr(sys.modules[__name__], "running_test_limit_s", limit)
    run = subprocess.run

    def checked_run(*args, **kwargs):
        caller = sys._getframe(1).f_code.co_filename
        if os.path.dirname(os.path.abspath(caller)) == TESTS_DIR:
            timeout = kwargs.get("timeout")
            if timeout is None or timeout > limit - SUBPROCESS_MARGIN_S:
                where = f"{os.path.basename(caller)}:{sys._getframe(1).f_lineno}"
                raise AssertionError(
                    f"{where}: subprocess.run(timeout={timeout}) in a test limited to {limit} s; give it a "
                    f"timeout of at most {limit - SUBPROCESS_MARGIN_S} s, or mark the test with a longer limit"
                )
        return run(*args, **kwargs)

    monkeypatch.setattr(subprocess, "run", checked_run)
