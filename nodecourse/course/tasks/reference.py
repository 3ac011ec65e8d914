"""The references of an exercise's tasks, computed in a separate clean process.

``python -m nodecourse.course.tasks.reference NN SEED CHECK...`` prints one
line of JSON, ``{check: reference value}``, and nothing else on stdout. The
grader (:func:`compute`) starts it in its own sandbox, never in the learner's
kernel, and decodes the line as plain data; the learner's code never runs in
it, so nothing the learner's code does to its own process reaches a reference.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from nodecourse.course import sandbox
from nodecourse.course.tasks import plain

REFERENCE_TIMEOUT_S = 600


class ReferenceRunError(RuntimeError):
    """The reference process failed: a fault of the course, never of the learner."""


def start(exercise: str, checks, seed: int, isolation: sandbox.Isolation, env: dict[str, str]):
    """Start the reference process; returns a handle for :func:`collect`."""
    workdir = Path(tempfile.mkdtemp(prefix="nodecourse-reference-"))
    command = [sys.executable, "-m", "nodecourse.course.tasks.reference", exercise, str(int(seed)), *checks]
    argv, full_env = sandbox.wrap(isolation, command, env, home=workdir / "home")
    proc = subprocess.Popen(
        argv,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **sandbox.popen_kwargs(isolation, workdir),
    )
    return proc, workdir, exercise, seed


def collect(handle, timeout_s: float = REFERENCE_TIMEOUT_S) -> dict:
    """Wait for the reference process; its decoded ``{check: value}``, or :class:`ReferenceRunError`."""
    import shutil

    proc, workdir, exercise, seed = handle
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise ReferenceRunError(f"the references of exercise {exercise} (seed {seed}) took over {timeout_s:g} s")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip()[-600:]
        raise ReferenceRunError(
            f"computing the references of exercise {exercise} (seed {seed}) failed "
            f"(exit code {proc.returncode}): {tail}"
        )
    try:
        lines = out.decode("utf-8").strip().splitlines()
        return plain.decode(lines[-1] if lines else "")
    except (plain.NotPlain, UnicodeDecodeError) as exc:
        raise ReferenceRunError(f"the reference process of exercise {exercise} sent no plain data: {exc}") from exc


def compute(exercise: str, checks, seed: int, isolation: sandbox.Isolation, env: dict[str, str]) -> dict:
    """:func:`start` then :func:`collect`."""
    return collect(start(exercise, checks, seed, isolation, env))


def main(argv: list[str]) -> int:
    from nodecourse.course import tasks

    if len(argv) < 3:
        print("usage: python -m nodecourse.course.tasks.reference NN SEED CHECK...", file=sys.stderr)
        return 2
    exercise, seed, checks = argv[0], int(argv[1]), argv[2:]
    text = tasks.reference_text(exercise, checks, seed)
    sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
