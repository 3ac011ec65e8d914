"""The ``nodecourse`` commands that hand their work to one module each: ``check``
(:mod:`~nodecourse.course.envcheck`), ``build`` (:mod:`~nodecourse.course.exercise_builder`),
``site`` (:mod:`~nodecourse.course.site`), ``physionet`` (:mod:`~nodecourse.course.physionet_cmd`)
and ``audit`` (:mod:`~nodecourse.course.audit_cmd`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nodecourse.course._cli_usage import course_root_or_exit


def run_check(args: argparse.Namespace) -> int:
    from nodecourse.course import envcheck, sandbox

    items = envcheck.collect()
    isolation = sandbox.probe()
    items.append(
        envcheck.Item(
            "grading isolation",
            isolation.summary(),
            isolation.sandboxed,
            False,
            "install bubblewrap (apt-get install bubblewrap) where the machine allows it; until then `nodecourse "
            "grade` still runs, and says its grades are for self-study only",
        )
    )
    print(envcheck.format_report(items))
    return 0 if all(i.ok for i in items if i.essential) else 1


def _is_packaged_course(solutions: Path) -> bool:
    """Whether ``solutions`` is the folder beside this package (an editable install's course)."""
    package_root = Path(__file__).resolve().parents[2]
    return solutions.resolve() == (package_root / "solutions").resolve()


def run_build(args: argparse.Namespace) -> int:
    from nodecourse.course import exercise_builder as eb

    root = None
    if args.solutions is None or args.exercises is None:
        root = course_root_or_exit(args.root)
    solutions = Path(args.solutions) if args.solutions else root / "solutions"
    exercises = Path(args.exercises) if args.exercises else root / "exercises"
    try:
        report = eb.build(solutions, exercises, check=args.check, names=args.names or None)
    except (eb.ExerciseFormatError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in report.lines():
        print(line)
    if not (report.written or report.unchanged or report.stale or report.missing or report.kept):
        print(f"no solution notebooks in {solutions}")
    if args.check:
        return 0 if report.up_to_date else 1
    if not args.names and _is_packaged_course(solutions):
        # The grader's shipped copy of the exercises (for a course copy without solutions/) follows the
        # package's own solutions; a build of another course or of some names leaves it as it is.
        from nodecourse.course.references import write_handout

        print(f"wrote {write_handout(solutions)}")
    return 1 if report.kept else 0  # a learner's notebook was left as it is: say so in the status


def run_site(args: argparse.Namespace) -> int:
    from nodecourse.course import site, site_urls

    root = course_root_or_exit(args.root)
    if args.update_readme:
        changed = site_urls.update_readme_badge(root)
        print(f"README.md: Binder badge {'rewritten' if changed else 'already'} for {site_urls.repository_url(root)}")
        return 0
    return site.main(root, Path(args.out) if args.out else root / "site")


def run_physionet(args: argparse.Namespace) -> int:
    from nodecourse.course import physionet_cmd

    return int(physionet_cmd.main(args) or 0)


def run_audit(args: argparse.Namespace) -> int:
    from nodecourse.course import audit_cmd

    return int(audit_cmd.main(args) or 0)
