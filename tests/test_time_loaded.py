"""scripts/time_loaded.py, the loaded-machine timing table: its tasks, its table, and one real run."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from notebook_fixtures import REPO, SUBPROCESS_ENV

SCRIPT = REPO / "scripts" / "time_loaded.py"


def _module():
    spec = importlib.util.spec_from_file_location("time_loaded", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_every_lesson_every_exercise_and_the_claims_are_tasks():
    tl = _module()
    names = {t.name for t in tl.discover_tasks()}
    lessons = {f"lesson{p.name[:2]}" for p in (REPO / "notebooks").glob("[0-9][0-9]_*.ipynb")}
    grades = {f"grade{p.name[:2]}" for p in (REPO / "solutions").glob("[0-9][0-9]_*.ipynb")}
    assert names == lessons | grades | {"claims"}


def test_the_table_flags_a_loaded_run_over_the_limit():
    tl = _module()
    row = tl.Row(
        "grade03",
        "nodecourse grade 03",
        threads={"before": 2, "after": 1},
        seconds={"before/idle": 30.0, "before/loaded": 120.0, "after/idle": 27.0, "after/loaded": 30.0},
    )
    text = tl.table([row], busy=True, settings=["before", "after"])
    assert "before (2 thr) idle" in text and "after (1 thr) idle" in text
    assert "4.00x (> 1.5x)" in text and "1.11x" in text and "1.11x (>" not in text


@pytest.mark.slow
def test_a_real_run_prints_the_table():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tasks", "lesson00", "--settings", "after"],
        cwd=REPO,
        env=SUBPROCESS_ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("| task | after (1 thr) idle |") and "00_start_here" in lines[2], proc.stdout
