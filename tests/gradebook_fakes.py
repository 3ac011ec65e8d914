"""A stand-in for the grading of one submission, so that the gradebook's own logic is tested in seconds.

:func:`fake_grade` has the shape of ``nodecourse.course.gradebook._grade_one`` and
runs in the gradebook's worker processes (it is imported there by name, so it
lives in a module). What it reports is written in the submission itself, in
its notebook metadata ``{"fake": {...}}``:

- ``passed``: the checks of exercise 1 that pass (default none);
- ``raise``: the name of an exception the grading raises (``OverflowError``...);
- ``warnings``: the warnings grading would give (``review: ...``, code outside answers);
- ``weights``: ``{check: weight}`` (default 1);
- ``exercise`` and ``checks``: another exercise's file name and check ids (default exercise 1's);
- ``delay``: seconds the grading takes;
- ``barrier``: a folder; the grading waits there until two gradings (of two runs) have reached it,
  so that two runs are grading at the same time;
- ``error``: a grading error (as the real grading reports one it caught: the submission's ``error``).
"""

from __future__ import annotations

import builtins
import json
from pathlib import Path

EXERCISE = "01_resnet_as_euler_exercises.ipynb"
CHECKS = ("euler-step", "residual-block", "euler-integrate-matches", "euler-order")


def write_submission(path: Path, **fake) -> Path:
    """A notebook file whose grading :func:`fake_grade` will report as ``fake`` says."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = {"cells": [], "metadata": {"fake": fake}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def fake_grade(job: tuple) -> dict:
    path, _reference, _timeout, seed, _notebook_timeout, _limits = job
    fake = json.loads(Path(path).read_text(encoding="utf-8"))["metadata"]["fake"]
    result = {
        "path": path,
        "rows": [],
        "warnings": list(fake.get("warnings", [])),
        "error": "",
        "seed": seed,
        "isolation": "fake",
        "time_s": 0.0,
    }
    import time

    if fake.get("barrier"):
        import os

        folder = Path(fake["barrier"])
        folder.mkdir(exist_ok=True)
        (folder / str(os.getpid())).touch()
        deadline = time.monotonic() + 60
        while len(list(folder.iterdir())) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    if fake.get("delay"):
        time.sleep(float(fake["delay"]))
    if fake.get("raise"):
        raise getattr(builtins, fake["raise"])("raised by the fake grading")
    if fake.get("error"):
        result["error"] = fake["error"]
        return result
    weights = fake.get("weights", {})
    exercise = fake.get("exercise", EXERCISE)
    for check in fake.get("checks", CHECKS):
        passed = check in fake.get("passed", ())
        result["rows"].append(
            {
                "notebook": path,
                "exercise": exercise,
                "check": check,
                "passed": passed,
                "reason": "" if passed else f"{check} differs; likely cause: a fake mistake",
                "check_cell_passed": passed,
                "isolation": "fake",
                "seed": seed,
                "weight": float(weights.get(check, 1.0)),
            }
        )
    return result


def sleepy_grade(job: tuple) -> dict:
    """:func:`fake_grade`, except that a submission whose metadata says ``{"sleep": true}`` starts a
    child process (as a grading starts its kernel) and waits on it without end: a run stopped by a
    signal must end both the worker and that child."""
    import subprocess
    import sys

    path = job[0]
    fake = json.loads(Path(path).read_text(encoding="utf-8"))["metadata"]["fake"]
    if fake.get("sleep"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
        child.wait()
    return fake_grade(job)
