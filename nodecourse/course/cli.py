"""The ``nodecourse`` command: lab, grade, check, build, claims, physionet, audit, site, nbgrader.

This module holds the parser (one argparse tree of every subcommand, :func:`build_parser`, so each
command's options and help read as one table) and :func:`main`, which checks the arguments and
hands each command to its handler: ``lab`` in :mod:`~nodecourse.course._cli_lab`, ``grade`` in
:mod:`~nodecourse.course._cli_grading`, ``claims`` in :mod:`~nodecourse.course._cli_claims`, the
others in :mod:`~nodecourse.course._cli_course`; the checks made after parsing are in
:mod:`~nodecourse.course._cli_usage`. Each handler is a thin layer over a module that does the work
(:mod:`nodecourse.course.grading`, :mod:`nodecourse.course.envcheck`,
:mod:`nodecourse.course.exercise_builder`, :mod:`nodecourse.claims`), imported only when that
subcommand runs, so ``nodecourse --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from nodecourse.course._cli_claims import run_claims
from nodecourse.course._cli_course import run_audit, run_build, run_check, run_physionet, run_site
from nodecourse.course._cli_grading import run_grade
from nodecourse.course._cli_lab import run_lab
from nodecourse.course._cli_usage import course_root_or_exit, output_path_error, unknown_leading_flag, usage_error
from nodecourse.validation import Arg, Interval, argparse_type

#: The numeric flags of ``lab`` and ``grade`` (``physionet``'s: ``physionet_cmd.FLAGS``): argparse
#: refuses a value outside its range with the library's wording.
FLAGS: dict[tuple[str, str], Arg] = {
    ("lab", "--port"): Arg(Interval(int, 1, 65535), fix="e.g. --port 8888"),
    ("grade", "--timeout"): Arg(Interval(float, 0, None, "neither", unit="(seconds)"), fix="e.g. --timeout 600"),
    ("grade", "--notebook-timeout"): Arg(
        Interval(float, 0, None, "neither", unit="(seconds)"), fix="e.g. --notebook-timeout 1800"
    ),
    ("grade", "--memory-mb"): Arg(Interval(int, 16, None), fix="e.g. --memory-mb 4096"),
    ("grade", "--tmp-mb"): Arg(Interval(int, 16, None), fix="e.g. --tmp-mb 512"),
    ("grade", "--jobs"): Arg(Interval(int, 1, None), fix="e.g. --jobs 4"),
    ("claims", "--workers"): Arg(Interval(int, 1, None), fix="e.g. --workers 2"),
}


#: nodecourse.course.grading's DEFAULT_CELL_TIMEOUT_S and DEFAULT_NOTEBOOK_TIMEOUT_S, spelled out so
#: that building the parser imports neither the grader nor torch (a test keeps them equal).
DEFAULT_CELL_TIMEOUT_S = 120
DEFAULT_NOTEBOOK_TIMEOUT_S = 1800


def build_parser() -> argparse.ArgumentParser:
    from nodecourse.course.sandbox import DEFAULT_MEMORY_MB, DEFAULT_TMP_MB  # the standard library only

    parser = argparse.ArgumentParser(
        prog="nodecourse",
        description="The nodecourse course: run it, grade exercises, check the environment.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser(
        "lab",
        help="start JupyterLab at lesson 0",
        description="Start JupyterLab in the course folder at notebooks/00_start_here.ipynb. "
        "Arguments it does not know are passed to jupyter lab.",
    )
    p.add_argument(
        "--port",
        type=argparse_type(FLAGS["lab", "--port"]),
        default=None,
        help="port for the server (default: jupyter's)",
    )
    p.add_argument(
        "--ip",
        default=None,
        help="address to listen on (default: jupyter's, localhost); an address other than "
        "loopback (127.0.0.0/8, ::1, localhost) needs --allow-remote",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --ip to be a network address (or empty: every interface). The server runs "
        "code as this user and its token is then the only protection",
    )
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--root", default=None, help="the course folder (default: found from the current directory)")
    p.add_argument("--dry-run", action="store_true", help="print the jupyter command instead of running it")

    p = sub.add_parser(
        "grade",
        help="grade exercise notebooks (exit 0 only when every check passes)",
        description="Grade exercise notebooks. Only the answer cells of NOTEBOOK are used: they are put "
        "into a fresh build of solutions/<same name>.ipynb (the reference, never the files in "
        "exercises/, which learners edit) and run in a new kernel. Exit 0 only when every check "
        "passes. The trust model (what this guarantees) is in CONTRIBUTING.md.",
    )
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK")
    p.add_argument(
        "--timeout",
        type=argparse_type(FLAGS["grade", "--timeout"]),
        default=DEFAULT_CELL_TIMEOUT_S,
        help=f"seconds each cell may run (default {DEFAULT_CELL_TIMEOUT_S}); after a timeout the "
        "kernel is restarted and the cells that passed are replayed",
    )
    p.add_argument(
        "--reference",
        default=None,
        help="the exercise to grade against (default: a fresh build from "
        "solutions/<same name>.ipynb; without one, grading stops with an error)",
    )
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    p.add_argument(
        "--seed",
        type=int,
        default=None,
        help="the seed the task inputs are drawn from (default: a new one for every run; give the "
        "seed a report names to run the same inputs again)",
    )
    p.add_argument(
        "--gradebook",
        default=None,
        metavar="FILE.csv",
        help="grade a class: each notebook in its own sandbox, several at once, one row per "
        "submission and one column per check into FILE.csv, then a summary of the class; "
        "run it again after an interruption and it skips the submissions already there",
    )
    p.add_argument(
        "--jobs",
        type=argparse_type(FLAGS["grade", "--jobs"]),
        default=None,
        metavar="N",
        help="with --gradebook: submissions graded at once (default: the usable CPUs)",
    )
    p.add_argument(
        "--regrade",
        action="append",
        default=None,
        metavar="ID",
        help="with --gradebook: grade this student again even if the file is unchanged "
        "(repeat for several; an id that is neither submitted nor in the gradebook is an error naming "
        "the close matches); an instructor's override is kept",
    )
    p.add_argument(
        "--roster",
        default=None,
        metavar="FILE.csv",
        help="with --gradebook: a CSV with columns file,student giving each submission's student "
        "id (default: taken from the file name, see docs/instructor.md)",
    )
    p.add_argument(
        "--per-student",
        default=None,
        metavar="FILE.csv",
        help="with --gradebook: after grading, write the whole gradebook as one row per student (a column "
        "per exercise, the total) for an LMS's grade import; an instructor's override counts, a submission "
        "that could not be graded is left empty, never 0",
    )
    p.add_argument(
        "--excel",
        action="store_true",
        help="with --gradebook: write the CSV files UTF-8 with a byte-order mark, so that Excel shows accented "
        "names right (a gradebook that already has one keeps it)",
    )
    p.add_argument(
        "--allow-unisolated",
        action="store_true",
        help="with --gradebook: grade the class even where no sandbox can be made (by default such a run "
        "stops before grading); the summary and every feedback file then say the grades were made without it",
    )
    p.add_argument(
        "--notebook-timeout",
        type=argparse_type(FLAGS["grade", "--notebook-timeout"]),
        default=DEFAULT_NOTEBOOK_TIMEOUT_S,
        help=f"seconds the whole notebook may take, replays included (default {DEFAULT_NOTEBOOK_TIMEOUT_S})",
    )
    p.add_argument(
        "--memory-mb",
        type=argparse_type(FLAGS["grade", "--memory-mb"]),
        default=DEFAULT_MEMORY_MB,
        help=f"memory limit of each grading kernel, in MB (default {DEFAULT_MEMORY_MB})",
    )
    p.add_argument(
        "--tmp-mb",
        type=argparse_type(FLAGS["grade", "--tmp-mb"]),
        default=DEFAULT_TMP_MB,
        help=f"size of the kernel's /tmp and home, and of any file it writes, in MB (default {DEFAULT_TMP_MB})",
    )
    p.add_argument(
        "--keep",
        default=None,
        metavar="DIR",
        help="write the assembled notebook and the outcomes into DIR, a new or empty folder "
        "(to see exactly what was run)",
    )

    sub.add_parser("check", help="report the environment (torch, devices, widgets, data, mode)")

    p = sub.add_parser(
        "build",
        help="build exercises/ from solutions/ (for course authors)",
        description="Build exercises/ from solutions/. An exercise in which any cell was changed "
        "or added (answers, setup cells, markdown notes: a learner's work) is never "
        "overwritten: the build names those cells, leaves the file as it is and exits "
        "1. Learners never need this command: the grader builds its reference itself.",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if an exercise is stale (an older build), holds a learner's "
        "work (the changed cells are named), is missing or is orphaned",
    )
    p.add_argument("--solutions", default=None, help="solutions folder (default: <root>/solutions)")
    p.add_argument("--exercises", default=None, help="exercises folder (default: <root>/exercises)")
    p.add_argument("--root", default=None, help="the course folder (default: found from the current directory)")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these solution file names")

    p = sub.add_parser("claims", help="run the claims ledger")
    p.add_argument("--quick", action="store_true", help="quick mode (also set by NODECOURSE_QUICK=1)")
    p.add_argument("--only", nargs="+", default=None, metavar="ID", help="only these rows")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON list of {id, claim, source, published, measured, verdict, ...} "
        "(the same as --format json)",
    )
    p.add_argument(
        "--format",
        choices=("text", "json", "markdown", "html"),
        default="text",
        help="text: a wrapped table (default); markdown or html: a dated report for instructors, every cell escaped",
    )
    p.add_argument(
        "--update",
        default=None,
        metavar="FILE",
        help="with --format markdown: write the table between the ledger markers of FILE "
        "(the README's table is written this way, never by hand)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--executor",
        choices=("serial", "ray"),
        default="serial",
        help="serial: one row after another here (default); ray: each row one Ray task, on a local "
        "runtime or the cluster at --address (pip install 'nodecourse[cluster]'; docs/cluster.md)",
    )
    p.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="with --executor ray: join the Ray cluster at ADDR (auto, host:6379 or ray://host:10001) "
        "instead of starting a local runtime",
    )
    p.add_argument(
        "--workers",
        type=argparse_type(FLAGS["claims", "--workers"]),
        default=None,
        metavar="N",
        help="with --executor ray: at most N rows at once (a local runtime gets N CPUs; default: every CPU)",
    )
    p.add_argument(
        "--cache",
        default=None,
        metavar="DIR",
        help="save each finished row in DIR and skip the rows found there (same row, mode and code version)",
    )

    from nodecourse.course import physionet_cmd

    p = sub.add_parser(
        "physionet",
        help="train and evaluate a model on PhysioNet 2012 (mortality AUC)",
        description=physionet_cmd.DESCRIPTION,
    )
    physionet_cmd.add_arguments(p)

    p = sub.add_parser(
        "site",
        help="build the course as a static website (site/) from the committed notebooks",
        description="Render every lesson (notebooks/NN_*.ipynb), the exercises, the claims ledger "
        "(docs/ledger-full.md) and the README's set-up into a static website, with "
        "links to run each lesson on Binder and to download it. Builds offline; exit 1 "
        "when an internal link of the site does not resolve.",
    )
    p.add_argument("--out", default=None, help="output folder (default: <root>/site; emptied first)")
    p.add_argument("--root", default=None, help="the course folder (default: found from the current directory)")
    p.add_argument(
        "--update-readme",
        action="store_true",
        help="only rewrite the README's Binder badge from pyproject.toml's [project.urls] Repository",
    )

    from nodecourse.course import audit_cmd

    p = sub.add_parser(
        "audit", help="audit one of the course's models in five steps (lesson 9)", description=audit_cmd.DESCRIPTION
    )
    audit_cmd.add_arguments(p)

    p = sub.add_parser("nbgrader", help="the course's grader as nbgrader's autograde step (docs/nbgrader.md)")
    steps = p.add_subparsers(dest="step", metavar="STEP", required=True)
    p = steps.add_parser("autograde", help="grade submitted/<student>/ASSIGNMENT/ into the course's gradebook.db")
    p.add_argument("assignment", metavar="ASSIGNMENT", help="the assignment's name in nbgrader's gradebook")
    p.add_argument("--course-dir", default=".", metavar="DIR", help="the nbgrader course folder (default: here)")
    p.add_argument("--student", action="append", metavar="ID", help="grade only this student (repeatable)")
    p.add_argument("--timeout", type=argparse_type(FLAGS["grade", "--timeout"]), default=None, help="seconds per cell")
    p.add_argument("--allow-unisolated", action="store_true", help="grade even where no sandbox can be made")
    jobs_help = "submissions graded at once, as nodecourse grade --gradebook does (default: the usable CPUs)"
    p.add_argument("--jobs", type=argparse_type(FLAGS["grade", "--jobs"]), metavar="N", help=jobs_help)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nodecourse`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    unknown = unknown_leading_flag(parser, argv)
    if unknown is not None:
        parser.error(f"unrecognized argument {unknown} (give it after the command, e.g. nodecourse grade --help)")
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "lab":  # lab passes what it does not know to jupyter
        parser.error(f"unrecognized arguments for `{args.command}`: {' '.join(extra)}")
    path_error = output_path_error(args)
    if path_error is not None:
        parser.error(path_error)  # exit 2, before any work
    if getattr(args, "root", None) is not None:
        course_root_or_exit(args.root)  # a wrong --root is named before torch is imported
    refused = usage_error(args)
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        return 2  # as the commands' own checks return it, before torch is imported
    if args.command != "check":  # `check` reports the choice from the environment as it is
        from nodecourse.config import use_course_threads

        # One place picks torch's CPU threads (nodecourse.config.thread_choice); it also sets
        # OMP_NUM_THREADS for what this command starts: JupyterLab's kernels, the grader's nbval run.
        try:
            use_course_threads()
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    if args.command == "lab":
        if extra and extra[0] == "--":
            extra = extra[1:]
        return run_lab(args, extra)
    handlers = {
        "grade": run_grade,
        "check": run_check,
        "build": run_build,
        "claims": run_claims,
        "physionet": run_physionet,
        "audit": run_audit,
        "site": run_site,
        "nbgrader": lambda a: __import__("nodecourse.course.nbgrader_bridge", fromlist=["main"]).main(a),
    }
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
