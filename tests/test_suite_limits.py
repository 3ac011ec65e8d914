"""The suite's own rules (``tests/conftest.py``): a subprocess a test starts must time out inside the test's
limit, so a hang reports the command and its output, not pytest-timeout's stack dump."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import DEFAULT_TIMEOUT_S, SUBPROCESS_MARGIN_S, subprocess_timeout

PASS = [sys.executable, "-c", "print('ran')"]


def test_a_subprocess_without_a_timeout_is_refused_before_it_starts():
    with pytest.raises(AssertionError, match=r"subprocess\.run\(timeout=None\) in a test limited to 120 s"):
        subprocess.run(PASS)


def test_a_subprocess_timeout_beyond_what_the_test_leaves_is_refused():
    with pytest.raises(AssertionError, match=f"at most {DEFAULT_TIMEOUT_S - SUBPROCESS_MARGIN_S} s"):
        subprocess.run(PASS, timeout=DEFAULT_TIMEOUT_S, capture_output=True)


def test_a_subprocess_timeout_inside_the_limit_runs():
    done = subprocess.run(PASS, timeout=subprocess_timeout(), capture_output=True, text=True)
    assert done.stdout == "ran\n"


@pytest.mark.timeout(300)
def test_helpers_default_to_what_the_running_tests_limit_leaves():
    assert subprocess_timeout() == 300 - SUBPROCESS_MARGIN_S
    done = subprocess.run(PASS, timeout=subprocess_timeout(), capture_output=True, text=True)
    assert done.stdout == "ran\n"
