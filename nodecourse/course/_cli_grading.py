"""``nodecourse grade``: one notebook or several graded here (:mod:`nodecourse.course.grading`), or
a class into a gradebook with ``--gradebook`` (:mod:`nodecourse.course.gradebook`), and the check of
how its flags combine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def grade_usage_error(args: argparse.Namespace) -> str | None:
    """How the flags of ``grade`` contradict each other, as a message naming them; None when they
    do not. Standard library only: :func:`main` calls it before torch is imported."""
    if args.gradebook is not None:
        if args.json or args.keep:
            return (
                "--gradebook writes a CSV (and a feedback file per student beside it); it does not "
                "combine with --json or --keep: grade one notebook with them to see its details"
            )
        return None
    for flag, value in (
        ("--jobs", args.jobs),
        ("--regrade", args.regrade),
        ("--roster", args.roster),
        ("--per-student", args.per_student),
        ("--excel", args.excel or None),
    ):
        if value is not None:
            return f"{flag} applies to --gradebook (a class graded at once); add --gradebook FILE.csv"
    if args.reference is not None and len(args.notebooks) != 1:
        return f"--reference applies to one notebook, got {len(args.notebooks)}; grade them one by one"
    return None


def run_grade(args: argparse.Namespace) -> int:
    refused = grade_usage_error(args)
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    if args.gradebook is not None:
        return run_gradebook(args)
    from nodecourse.course import grading

    return grading.main(
        args.notebooks,
        reference=args.reference,
        timeout_s=args.timeout,
        as_json=args.json,
        keep_dir=args.keep,
        seed=args.seed,
        notebook_timeout_s=args.notebook_timeout,
        limits=_limits(args),
    )


def _limits(args: argparse.Namespace):
    from nodecourse.course.sandbox import Limits

    return Limits(memory_mb=args.memory_mb, tmp_mb=args.tmp_mb)


def run_gradebook(args: argparse.Namespace) -> int:
    from nodecourse.course import gradebook, sandbox

    refused = grade_usage_error(args)
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    try:
        summary = gradebook.grade_class(
            args.notebooks,
            args.gradebook,
            timeout_s=args.timeout,
            jobs=args.jobs,
            seed=args.seed,
            reference=args.reference,
            regrade=args.regrade or (),
            roster=args.roster,
            notebook_timeout_s=args.notebook_timeout,
            limits=_limits(args),
            isolation=sandbox.probe(),
            allow_unisolated=args.allow_unisolated,
            excel=args.excel,
        )
        if args.per_student is not None:
            students = gradebook.export_per_student(args.gradebook, args.per_student, excel=args.excel)
    except gradebook.GradebookError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(summary.lines()))
    print(
        f"gradebook: {args.gradebook} (feedback per student in "
        f"{Path(args.gradebook).with_name(Path(args.gradebook).stem + '-feedback')}/)"
    )
    if args.per_student is not None:
        print(f"one row per student ({students}): {args.per_student}")
    return 1 if summary.errors else 0
