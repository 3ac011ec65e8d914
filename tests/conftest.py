"""Per-test time limits (a short default, longer ones for the slow tiers) and the worker count of
``pytest -n auto``.

pytest-timeout only stops a hang; no test asserts on wall-clock time.
"""

from __future__ import annotations

import pytest

DEFAULT_TIMEOUT_S = 120
TIER_TIMEOUT_S = {"slow": 900, "browser": 1200, "binder": 1800}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        limits = [s for name, s in TIER_TIMEOUT_S.items() if item.get_closest_marker(name)]
        item.add_marker(pytest.mark.timeout(max(limits, default=DEFAULT_TIMEOUT_S)))


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
