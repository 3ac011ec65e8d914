"""The ledger on Ray (``run_claims(executor="ray")``): the same results as a serial run, a row that
raises is that row's error, and a rerun with the cache runs nothing again.

The rows are among the quick ledger's cheapest (well under a second each, serially); the time goes
into starting the local Ray runtime, which this file does once.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

try:
    import ray
except ImportError:  # the `cluster` extra (and the `test` extra) install it
    pytest.skip("Ray is not installed: pip install 'nodecourse[cluster]' to run these tests", allow_module_level=True)

from nodecourse.claims import REGISTRY, ClaimVerdict, RowCache, load_rows, run_claims
from nodecourse.claims._executors import ray_runtime
from nodecourse.measure import json_safe

pytestmark = pytest.mark.slow

CHEAP_ROWS = ["tolerance-nfe", "reversal-steps", "hutchinson-unbiased", "reversible-gradient-exact"]


def same_results(a, b) -> None:
    """Every field a report shows, timings aside."""
    assert [r.id for r in a] == [r.id for r in b]
    for x, y in zip(a, b):
        assert (x.verdict, x.measured, x.seeds, x.unit, x.details, x.threshold) == (
            y.verdict,
            y.measured,
            y.seeds,
            y.unit,
            y.details,
            y.threshold,
        ), x.id


def as_json(result) -> dict:
    return json_safe(result.as_dict())


@pytest.fixture(scope="module")
def local_ray():
    """One two-CPU local runtime, started as ``run_claims(executor="ray", workers=2)`` starts its own,
    for every test below (``run_claims`` uses a runtime already started): a start takes tens of
    seconds on a loaded two-core machine."""
    with ray_runtime(workers=2):
        assert ray.cluster_resources()["CPU"] == 2
        yield
    assert not ray.is_initialized()  # shut down after


def test_two_ray_workers_return_what_a_serial_run_returns(local_ray):
    serial = run_claims(CHEAP_ROWS, quick=True)
    distributed = run_claims(CHEAP_ROWS, quick=True, executor="ray", workers=2)
    same_results(serial, distributed)
    assert all(r.verdict is not ClaimVerdict.ERROR for r in distributed)


def counted(spec, calls: Path):
    """``spec`` whose measure appends its id to ``calls`` first (a nested function: Ray's pickler
    sends it to the worker by value, and the file is on this machine's disk, which both see)."""
    original = spec.measure

    def measure(quick):
        with open(calls, "a", encoding="utf-8") as f:
            f.write(spec.id + "\n")
        return original(quick)

    return dataclasses.replace(spec, measure=measure)


def failing(spec_id: str, calls: Path):
    def measure(quick):
        with open(calls, "a", encoding="utf-8") as f:
            f.write(spec_id + "\n")
        raise RuntimeError("the measurement broke")

    template = load_rows()[CHEAP_ROWS[0]]
    return dataclasses.replace(template, id=spec_id, measure=measure)


def test_a_raising_row_is_its_own_error_and_the_cache_runs_nothing_again(local_ray, tmp_path, monkeypatch):
    calls, cache = tmp_path / "calls.txt", tmp_path / "cache"
    load_rows()
    for cid in CHEAP_ROWS:
        monkeypatch.setitem(REGISTRY, cid, counted(REGISTRY[cid], calls))
    monkeypatch.setitem(REGISTRY, "always-raises", failing("always-raises", calls))
    ids = [CHEAP_ROWS[0], "always-raises", *CHEAP_ROWS[1:]]

    first = run_claims(ids, quick=True, executor="ray", keep_going=True, cache_dir=str(cache))
    assert [r.id for r in first] == ids  # ledger order, whichever finished first
    error = first[1]
    assert error.verdict is ClaimVerdict.ERROR
    assert error.measured == "the row raised RuntimeError: the measurement broke"
    assert all(r.verdict is not ClaimVerdict.ERROR for r in first if r.id != "always-raises")
    assert sorted(calls.read_text().split()) == sorted(ids)
    assert len(list(cache.glob("*.json"))) == len(CHEAP_ROWS)  # the error is not saved: a rerun tries it

    again = run_claims(CHEAP_ROWS, quick=True, executor="ray", cache_dir=str(cache))
    assert sorted(calls.read_text().split()) == sorted(ids)  # no measure ran again
    # A cached row comes back as JSON data: what `nodecourse claims --json` prints of it is unchanged.
    assert [as_json(r) for r in again] == [as_json(r) for r in first if r.id != "always-raises"]
    assert [r.seconds for r in again] == [r.seconds for r in first if r.id != "always-raises"]

    with pytest.raises(RuntimeError, match="the measurement broke") as caught:
        run_claims(["always-raises", CHEAP_ROWS[0]], quick=True, executor="ray")
    assert "claim 'always-raises'" in " ".join(getattr(caught.value, "__notes__", []))


def test_the_cache_keeps_quick_full_and_code_versions_apart(tmp_path):
    cache = RowCache(tmp_path, version="v1")
    paths = {cache.path("annulus", True), cache.path("annulus", False), RowCache(tmp_path, "v2").path("annulus", True)}
    assert len(paths) == 3
    assert cache.path("a/b", True).parent == tmp_path  # an id never leaves the folder


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"executor": "spark"}, "executor='spark'"),
        ({"executor": "ray", "workers": 0}, "workers=0"),
        ({"address": "auto"}, "address and workers apply to executor='ray'"),
    ],
)
def test_a_wrong_executor_argument_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_claims(CHEAP_ROWS, **kwargs)


def killed(spec_id: str, calls: Path):
    """A row whose worker process dies mid-task (``os._exit``, as the kernel's OOM killer or a lost
    node ends it): no exception reaches Ray from the task, only the worker's death."""

    def measure(quick):
        with open(calls, "a", encoding="utf-8") as f:
            f.write(spec_id + "\n")
        os._exit(137)

    template = load_rows()[CHEAP_ROWS[0]]
    return dataclasses.replace(template, id=spec_id, measure=measure)


def test_a_killed_task_is_its_rows_error_and_a_rerun_runs_only_that_row(local_ray, tmp_path, monkeypatch):
    calls, cache = tmp_path / "calls.txt", tmp_path / "cache"
    real = load_rows()[CHEAP_ROWS[0]]  # before the counting wrappers go in
    for cid in CHEAP_ROWS:
        monkeypatch.setitem(REGISTRY, cid, counted(REGISTRY[cid], calls))
    monkeypatch.setitem(REGISTRY, "worker-killed", killed("worker-killed", calls))
    ids = [*CHEAP_ROWS[:2], "worker-killed", *CHEAP_ROWS[2:]]

    first = run_claims(ids, quick=True, executor="ray", keep_going=True, cache_dir=str(cache))
    assert [r.id for r in first] == ids
    dead = first[2]
    assert dead.verdict is ClaimVerdict.ERROR
    assert dead.measured.startswith("the row's Ray task (worker-killed) raised ")
    assert all(r.verdict is not ClaimVerdict.ERROR for r in first if r.id != "worker-killed")

    # The row mended (here: the real measurement put back), the same command resumes: only it runs.
    monkeypatch.setitem(REGISTRY, "worker-killed", counted(dataclasses.replace(real, id="worker-killed"), calls))
    again = run_claims(ids, quick=True, executor="ray", keep_going=True, cache_dir=str(cache))
    assert calls.read_text().split().count("worker-killed") == 2
    assert all(calls.read_text().split().count(cid) == 1 for cid in CHEAP_ROWS)
    assert again[2].verdict is not ClaimVerdict.ERROR
