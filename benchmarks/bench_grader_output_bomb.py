"""The grader's own peak memory while a learner's cell prints an output bomb (issue 28, item 7).

Grades exercise 1's solution once (so every import the grader needs is loaded), notes
the grader's peak resident set size, then grades the same notebook with a first
answer cell that prints ``--megabytes`` (default 600) MB, and prints both peaks
(``ru_maxrss`` of this process: the kernels and the reference process are other
processes and are not counted).

    .venv/bin/python benchmarks/bench_grader_output_bomb.py [--megabytes 600] [--timeout 300]
"""

from __future__ import annotations

import argparse
import copy
import resource
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=600)
    parser.add_argument("--timeout", type=float, default=300, help="per-cell timeout of the bomb's grading")
    args = parser.parse_args(argv)

    from nodecourse.course import grading
    from nodecourse.course.exercise_builder import answer_id

    solution = nbformat.read(SOLUTION, as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain" / SOLUTION.name
        plain.parent.mkdir()
        nbformat.write(solution, plain)
        rows, _ = grading.grade_notebook(plain, seed=1, timeout_s=120)
        before = peak_mb()
        bomb = copy.deepcopy(solution)
        cell = next(c for c in bomb.cells if answer_id(c) == "euler-step")
        cell.source = f"for _ in range({args.megabytes}):\n    print('x' * (2 ** 20 - 1))\n" + cell.source
        path = Path(tmp) / "bomb" / SOLUTION.name
        path.parent.mkdir()
        nbformat.write(bomb, path)
        start = time.monotonic()
        rows, _ = grading.grade_notebook(path, seed=1, timeout_s=args.timeout)
        seconds = time.monotonic() - start
    print(f"grader peak RSS after grading the solution: {before:.0f} MB")
    print(
        f"grader peak RSS after grading a {args.megabytes} MB output bomb: {peak_mb():.0f} MB "
        f"({seconds:.0f} s; checks passed {sum(r.passed for r in rows)}/{len(rows)})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
