"""The disk layer of the study cache (``NODECOURSE_STUDY_CACHE``, nodecourse/lessons/study.py): processes
that share the folder read one run of a study; it is off unless the variable names a folder.

Each test runs a small study module in fresh Python processes; the study appends a line to a calls
file every time it computes, so the tests count computations, not time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nodecourse.lessons.study import CACHE_ENV
from notebook_fixtures import SUBPROCESS_ENV

PROBE = """
import os, pathlib, time
import torch
from nodecourse.lessons.study import cached_study


def _count(name, *args):
    with open(os.environ["PROBE_CALLS"], "a") as file:
        file.write(f"{name} {args}\\n")
    go = os.environ.get("PROBE_WAIT_FOR")
    if go:  # the racing test holds the first computation open until the second process is waiting
        pathlib.Path(go + ".started").touch()
        while not os.path.exists(go):
            time.sleep(0.05)


@cached_study
def measure(n: int, label: str = "run", progress: bool = False):
    _count("measure", n, label)
    return {"label": label, "weights": torch.arange(n, dtype=torch.float64) ** 2}


@cached_study
def closure(n: int):
    _count("closure", n)
    return lambda: n  # a lambda cannot be pickled: this result stays in memory
"""

RUN = """
import json, sys
import probe_study
from nodecourse.lessons.study import disk_cache_counts
print("calling", flush=True)
out = []
for call in json.loads(sys.argv[1]):
    name, args = call[0], call[1:]
    result = getattr(probe_study, name)(*args)
    out.append(result() if callable(result) else [result["label"], result["weights"].tolist()])
print(json.dumps({"results": out, "counts": disk_cache_counts()}))
"""


@pytest.fixture
def probe(tmp_path):
    (tmp_path / "probe_study.py").write_text(PROBE)
    env = {k: v for k, v in SUBPROCESS_ENV.items() if k != CACHE_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env["PYTHONPATH"]])
    env["PROBE_CALLS"] = str(tmp_path / "calls.txt")
    return tmp_path, env


def _start(env, calls, **extra):
    command = [sys.executable, "-c", RUN, json.dumps(calls)]
    return subprocess.Popen(command, env={**env, **extra}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run(env, calls, **extra) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(calls)], env={**env, **extra}, capture_output=True, text=True, timeout=90
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


def _calls(folder: Path) -> list[str]:
    path = folder / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_a_second_process_reads_the_first_ones_result(probe):
    folder, env = probe
    cache = {CACHE_ENV: str(folder / "studies")}
    first = _run(env, [["measure", 3]], **cache)
    second = _run(env, [["measure", 3, "run"]], **cache)  # the same key: a default spelled out
    assert first["results"] == second["results"] == [["run", [0.0, 1.0, 4.0]]]
    assert _calls(folder) == ["measure (3, 'run')"]
    assert first["counts"] == {"computed": 1, "written": 1}
    assert second["counts"] == {"read": 1}


def test_different_arguments_are_different_entries(probe):
    folder, env = probe
    cache = {CACHE_ENV: str(folder / "studies")}
    _run(env, [["measure", 3], ["measure", 3, "other"]], **cache)
    again = _run(env, [["measure", 4], ["measure", 3, "other"], ["measure", 3]], **cache)
    assert again["results"] == [["run", [0.0, 1.0, 4.0, 9.0]], ["other", [0.0, 1.0, 4.0]], ["run", [0.0, 1.0, 4.0]]]
    assert _calls(folder) == ["measure (3, 'run')", "measure (3, 'other')", "measure (4, 'run')"]
    assert len(list((folder / "studies").glob("*.pt"))) == 3


def test_two_racing_processes_compute_once(probe):
    folder, env = probe
    go = folder / "go"
    cache = {CACHE_ENV: str(folder / "studies"), "PROBE_WAIT_FOR": str(go)}
    first = _start(env, [["measure", 5]], **cache)
    try:
        for _ in range(1800):  # until the first process is inside the computation (it waits for `go`)
            if Path(f"{go}.started").exists() or first.poll() is not None:
                break
            time.sleep(0.05)
        assert first.poll() is None, first.communicate()
        second = _start(env, [["measure", 5]], **cache)
        assert second.stdout.readline() == "calling\n"
        time.sleep(1.0)  # time to reach the study: without the lock it would compute (and log) now
        go.touch()
        outs = [p.communicate(timeout=90) for p in (first, second)]
    finally:
        for p in (first, *([second] if "second" in locals() else [])):
            p.kill()
    assert [p.returncode for p in (first, second)] == [0, 0], [err for _, err in outs]
    results = [json.loads(out.splitlines()[-1]) for out, _ in outs]
    assert _calls(folder) == ["measure (5, 'run')"]
    assert results[0]["results"] == results[1]["results"]
    assert results[1]["counts"] == {"read": 1}


def test_a_result_that_cannot_be_pickled_is_computed_and_counted(probe):
    folder, env = probe
    cache = {CACHE_ENV: str(folder / "studies")}
    first = _run(env, [["closure", 2], ["closure", 2]], **cache)
    second = _run(env, [["closure", 2]], **cache)
    assert first["results"] == [2, 2] and second["results"] == [2]
    assert _calls(folder) == ["closure (2,)", "closure (2,)"]  # once per process: memory only
    assert first["counts"] == second["counts"] == {"computed": 1, "not_saved": 1}
    assert [p.name for p in (folder / "studies").iterdir() if not p.name.endswith(".lock")] == []


def test_a_corrupt_cache_file_is_computed_again(probe):
    folder, env = probe
    cache = {CACHE_ENV: str(folder / "studies")}
    _run(env, [["measure", 2]], **cache)
    (saved,) = (folder / "studies").glob("*.pt")
    saved.write_bytes(saved.read_bytes()[:40])  # a torn write
    again = _run(env, [["measure", 2]], **cache)
    assert again["results"] == [["run", [0.0, 1.0]]]
    assert again["counts"] == {"unreadable": 1, "computed": 1, "written": 1}
    assert len(_calls(folder)) == 2
    assert _run(env, [["measure", 2]], **cache)["counts"] == {"read": 1}  # written over


def test_off_by_default(probe):
    folder, env = probe
    assert CACHE_ENV not in env
    first = _run(env, [["measure", 3]])
    second = _run(env, [["measure", 3]], **{CACHE_ENV: ""})  # empty: off as well
    assert first["counts"] == second["counts"] == {}
    assert len(_calls(folder)) == 2
    assert sorted(p.name for p in folder.iterdir()) == ["calls.txt", "probe_study.py"]


def test_a_cleared_study_computes_itself_in_this_process(tmp_path, monkeypatch):
    """``clear()`` is how a test measures again after patching something: the result filed before the
    patch must not come back, and the one measured with it must not reach other processes."""
    from nodecourse.lessons import study

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    calls = []

    def measure(n: int):
        calls.append(n)
        return n * 2

    measure.__qualname__ = "probe_cleared_measure"  # a module-level name: filed on disk
    cached = study.cached_study(measure)
    assert cached(4) == 8 and len(list(tmp_path.glob("*.pt"))) == 1
    cached.clear()
    assert cached(4) == 8 and calls == [4, 4]  # computed, not read back
    assert len(list(tmp_path.glob("*.pt"))) == 1


def test_a_folder_that_cannot_be_made_names_the_variable(tmp_path, monkeypatch):
    from nodecourse.lessons import study

    (tmp_path / "a_file").write_text("")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "a_file" / "studies"))

    def measure(n: int):
        return n

    measure.__qualname__ = "probe_unwritable_measure"
    with pytest.raises(OSError, match=f"{CACHE_ENV}=.*name another, or unset it"):
        study.cached_study(measure)(1)
