"""The ``nodecourse`` command: lab, grade, check, build, claims, physionet.

Each subcommand is a thin layer over a module that does the work
(:mod:`nodecourse.grading`, :mod:`nodecourse.envcheck`,
:mod:`nodecourse.exercise_builder`, :mod:`nodecourse.claims`), imported only
when that subcommand runs, so ``nodecourse --help`` stays fast.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

START_NOTEBOOK = Path("notebooks") / "00_start_here.ipynb"


def _course_root_or_exit(explicit: str | None) -> Path:
    from nodecourse.exercise_builder import find_course_root

    if explicit is not None:
        root = Path(explicit).resolve()
        if not (root / "notebooks").is_dir():
            raise SystemExit(f"error: --root={explicit!r} has no notebooks/ folder; give the course folder")
        return root
    root = find_course_root()
    if root is None:
        raise SystemExit(
            "error: cannot find the course folder (one with notebooks/) from the current "
            "directory or the installed package; cd into the course or pass --root"
        )
    return root


# ---------------------------------------------------------------------------
# lab
# ---------------------------------------------------------------------------

def lab_command(args: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    """The JupyterLab command line ``nodecourse lab`` runs (in the course root)."""
    root = _course_root_or_exit(args.root)
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}"]
    start = root / START_NOTEBOOK
    if start.is_file():
        cmd.append(str(START_NOTEBOOK))  # opened in the first tab, relative to root_dir
    if args.port is not None:
        cmd.append(f"--port={args.port}")
    if args.ip is not None:
        cmd.append(f"--ip={args.ip}")
    if args.no_browser:
        cmd.append("--no-browser")
    # Jupyter refuses to start as root without this flag (containers, Binder-like hosts).
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")
    cmd.extend(extra)
    return cmd


def run_lab(args: argparse.Namespace, extra: Sequence[str]) -> int:
    cmd = lab_command(args, extra)
    root = _course_root_or_exit(args.root)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    if not (root / START_NOTEBOOK).is_file():
        print(f"warning: {root / START_NOTEBOOK} not found; opening the file browser instead", file=sys.stderr)
    try:
        return subprocess.call(cmd, cwd=root)
    except KeyboardInterrupt:
        return 130


# ---------------------------------------------------------------------------
# grade, check, build, claims
# ---------------------------------------------------------------------------

def run_grade(args: argparse.Namespace) -> int:
    from nodecourse import grading

    return grading.main(
        args.notebooks, reference=args.reference, timeout_s=args.timeout,
        as_json=args.json, keep_dir=args.keep,
    )


def run_check(args: argparse.Namespace) -> int:
    from nodecourse import envcheck

    return envcheck.main()


def run_build(args: argparse.Namespace) -> int:
    from nodecourse import exercise_builder as eb

    root = None
    if args.solutions is None or args.exercises is None:
        root = _course_root_or_exit(args.root)
    solutions = Path(args.solutions) if args.solutions else root / "solutions"
    exercises = Path(args.exercises) if args.exercises else root / "exercises"
    try:
        report = eb.build(solutions, exercises, check=args.check, names=args.names or None)
    except (eb.ExerciseFormatError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in report.lines():
        print(line)
    if not (report.written or report.unchanged or report.stale or report.missing):
        print(f"no solution notebooks in {solutions}")
    if args.check:
        return 0 if report.up_to_date else 1
    return 0


def _jsonable(value):
    """Make a claim's details printable as JSON (numbers, tensors, arrays, enums)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if hasattr(value, "tolist"):  # numpy arrays and scalars, torch tensors
        return _jsonable(value.tolist())
    if hasattr(value, "value") and isinstance(getattr(value, "value"), (str, int, float)):
        return value.value  # enums
    return str(value)


def run_claims(args: argparse.Namespace) -> int:
    from nodecourse import claims
    from nodecourse.config import quick_mode

    quick = args.quick or quick_mode()
    registry = claims.load_rows()
    if not registry:
        print("error: no claim rows are registered yet (nodecourse/claims/lessonNN.py)", file=sys.stderr)
        return 1
    try:
        results = claims.run_claims(args.only, quick=quick, progress=not args.json)
    except ValueError as exc:  # unknown id: the message lists the valid ones
        print(f"error: --only: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([_jsonable(r.as_dict()) for r in results], indent=1))
    else:
        print(claims.format_table(results))
        print(f"({'quick' if quick else 'full'} mode; verdicts computed from the measurements)")
    return 0


# ---------------------------------------------------------------------------
# physionet (another module provides its options)
# ---------------------------------------------------------------------------

def run_physionet(extra: Sequence[str]) -> int:
    try:
        from nodecourse import physionet_cli
    except ImportError as exc:
        print(
            f"error: `nodecourse physionet` is not available in this installation "
            f"(cannot import nodecourse.physionet_cli: {exc})",
            file=sys.stderr,
        )
        return 2
    parser = argparse.ArgumentParser(prog="nodecourse physionet",
                                     description="Train one model on PhysioNet 2012 (in-hospital mortality) and print its evaluation AUC.")
    physionet_cli.add_arguments(parser)
    return int(physionet_cli.main(parser.parse_args(list(extra))) or 0)


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    from nodecourse.grading import DEFAULT_CELL_TIMEOUT_S

    parser = argparse.ArgumentParser(
        prog="nodecourse",
        description="The nodecourse course: run it, grade exercises, check the environment.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("lab", help="start JupyterLab at lesson 0",
                       description="Start JupyterLab in the course folder at notebooks/00_start_here.ipynb. "
                                   "Arguments it does not know are passed to jupyter lab.")
    p.add_argument("--port", type=int, default=None, help="port for the server (default: jupyter's)")
    p.add_argument("--ip", default=None, help="address to listen on (default: jupyter's, localhost)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("--root", default=None, help="the course folder (default: found from the current directory)")
    p.add_argument("--dry-run", action="store_true", help="print the jupyter command instead of running it")

    p = sub.add_parser("grade", help="grade exercise notebooks (exit 0 only when every check passes)")
    p.add_argument("notebooks", nargs="+", metavar="NOTEBOOK")
    p.add_argument("--timeout", type=float, default=DEFAULT_CELL_TIMEOUT_S,
                   help=f"seconds each cell may run (default {DEFAULT_CELL_TIMEOUT_S})")
    p.add_argument("--reference", default=None,
                   help="the exercise to grade against (default: exercises/<same name>.ipynb)")
    p.add_argument("--json", action="store_true", help="print the rows as a JSON list")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="leave the assembled notebook in DIR (to see exactly what was run)")

    sub.add_parser("check", help="report the environment (torch, devices, widgets, data, mode)")

    p = sub.add_parser("build", help="build exercises/ from solutions/")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if an exercise is stale, missing or orphaned")
    p.add_argument("--solutions", default=None, help="solutions folder (default: <root>/solutions)")
    p.add_argument("--exercises", default=None, help="exercises folder (default: <root>/exercises)")
    p.add_argument("--root", default=None, help="the course folder (default: found from the current directory)")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these solution file names")

    p = sub.add_parser("claims", help="run the claims ledger")
    p.add_argument("--quick", action="store_true", help="quick mode (also set by NODECOURSE_QUICK=1)")
    p.add_argument("--only", nargs="+", default=None, metavar="ID", help="only these rows")
    p.add_argument("--json", action="store_true",
                   help="print one JSON list of {id, claim, source, published, measured, verdict, ...}")

    sub.add_parser("physionet", help="train and evaluate a model on PhysioNet 2012 (see `nodecourse physionet --help`)",
                   add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``nodecourse`` console script; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "physionet":  # its options belong to nodecourse.physionet_cli
        return run_physionet(argv[1:])
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if args.command == "lab":
        if extra and extra[0] == "--":
            extra = extra[1:]
        return run_lab(args, extra)
    if extra:
        parser.error(f"unrecognized arguments for `{args.command}`: {' '.join(extra)}")
    handlers = {"grade": run_grade, "check": run_check, "build": run_build, "claims": run_claims}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
