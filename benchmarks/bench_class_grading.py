"""Time for an instructor to autograde a class in nbgrader: ``nodecourse nbgrader autograde --jobs N``.

A simulated class of exercise-2 submissions (``tests/class_fixtures.py``'s
``make_exercise2_class``: correct, partial, blank, broken, an infinite loop, in
turn) is collected into a fresh nbgrader course for each ``--jobs`` value
(``submitted/<student>/ex2/`` with nbgrader's ``timestamp.txt``, a gradebook.db
made by nbgrader), and the instructor's command is run on it, timed from start
to exit. Prints one table row per ``--jobs`` value (submissions a minute, the
1-minute load average before and after the run) and the points of each kind;
exits 1 when two ``--jobs`` values wrote different points for any student and
check (the gradebook must not depend on how many were graded at once).

    .venv/bin/python benchmarks/bench_class_grading.py --size 30 --jobs 1 2 --timeout 30
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from class_fixtures import SOLUTION_2, make_exercise2_class  # noqa: E402

ASSIGNMENT = "ex2"
COURSE_ID = "neural-odes"
DUE = datetime.datetime(2026, 12, 1, 17, 0)


def make_course(root: Path, class_dir: Path, kinds: dict[str, str]) -> dict[str, str]:
    """An nbgrader course in ``root`` with every file of ``class_dir`` submitted by one student;
    returns ``{student: kind}``."""
    from nbgrader.api import Gradebook

    root.mkdir(parents=True)
    (root / "nbgrader_config.py").write_text(f'c = get_config()\nc.CourseDirectory.course_id = "{COURSE_ID}"\n')
    students = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        gb.add_assignment(ASSIGNMENT, duedate=DUE)
        for i, (name, kind) in enumerate(sorted(kinds.items())):
            student = f"s{i + 1:02d}"
            gb.add_student(student)
            folder = root / "submitted" / student / ASSIGNMENT
            folder.mkdir(parents=True)
            (folder / SOLUTION_2.name).write_bytes((class_dir / name).read_bytes())
            (folder / "timestamp.txt").write_text(DUE.strftime("%Y-%m-%d %H:%M:%S.%f UTC"))
            students[student] = kind
    return students


def scores(root: Path) -> dict[tuple[str, str], float | None]:
    """``{(student, check): auto_score}`` of the course's gradebook."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        for submission in gb.assignment_submissions(ASSIGNMENT):
            for nb in submission.notebooks:
                for grade in nb.grades:
                    out[submission.student.id, grade.cell.name] = grade.auto_score
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=30, help="submissions in the class (default 30)")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="--jobs values to time (default 1 2)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per cell (default 30)")
    args = parser.parse_args()
    # nbgrader runs `alembic` (installed beside it) to stamp a new gradebook.db: the environment's bin/ on PATH
    os.environ["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-class-") as tmp:
        class_dir = Path(tmp) / "class"
        kinds = make_exercise2_class(class_dir, args.size)
        for jobs in args.jobs:
            course = Path(tmp) / f"course-jobs{jobs}"
            students = make_course(course, class_dir, kinds)
            command = [sys.executable, "-m", "nodecourse.course.cli", "nbgrader", "autograde", ASSIGNMENT]
            command += ["--course-dir", str(course), "--jobs", str(jobs), "--timeout", f"{args.timeout:g}"]
            load_before = os.getloadavg()[0]
            start = time.monotonic()
            proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
            seconds = time.monotonic() - start
            load_after = os.getloadavg()[0]
            not_graded = [line for line in proc.stdout.splitlines() if ": not graded:" in line]
            runs.append((jobs, seconds, load_before, load_after, proc.returncode, not_graded, scores(course), students))
            print(f"--jobs {jobs}: {seconds:.0f} s, exit {proc.returncode}, {len(not_graded)} not graded", flush=True)
    print(f"\n{datetime.date.today()}, {platform.node()}, {os.cpu_count()} CPUs, {platform.python_version()}")
    print("| --jobs | submissions | seconds | submissions/min | load avg (1 min) before -> after | not graded |")
    print("|---|---|---|---|---|---|")
    for jobs, seconds, before, after, _, not_graded, _, _ in runs:
        print(
            f"| {jobs} | {args.size} | {seconds:.0f} | {args.size / seconds * 60:.1f} | {before:.1f} -> {after:.1f} "
            f"| {len(not_graded)} |"
        )
    first = runs[0]
    by_kind: dict[str, set[float]] = {}
    for student, kind in first[7].items():
        total = sum(s or 0.0 for (sid, _), s in first[6].items() if sid == student)
        by_kind.setdefault(kind, set()).add(total)
    print("\npoints by kind (--jobs %d): %s" % (first[0], {k: sorted(v) for k, v in by_kind.items()}))
    for line in first[5]:
        print(line)
    differ = [r[0] for r in runs[1:] if r[6] != first[6]]
    if differ:
        print(f"the gradebook after --jobs {differ} differs from the one after --jobs {first[0]}")
        return 1
    print(f"every --jobs value wrote the same {len(first[6])} (student, check) scores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
