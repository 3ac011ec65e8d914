"""The ``nodecourse`` command's argument checks: what :func:`nodecourse.course.cli.main` refuses
after parsing and before any work, each as a message naming the flag and the fix (a missing or
unwritable path, a wrong ``--root``, flags that contradict each other, a flag before the command).
Standard library only: a refused command never imports torch.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import Sequence

from nodecourse.course._cli_claims import claims_executor_error
from nodecourse.course._cli_grading import grade_usage_error


def course_root_or_exit(explicit: str | None) -> Path:
    """The course folder: ``--root`` (``explicit``) when given, else the one found from here; exits
    with a message naming the fix when there is none."""
    from nodecourse.course.paths import find_course_root

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


#: The output paths each subcommand writes: (command, dest) -> what must hold before any work.
#: "file": its folder exists and it is not a folder; "folder": its parent exists and it is not a
#: file; "existing file": it exists (it is read, then rewritten).
OUTPUT_PATHS: dict[tuple[str, str], str] = {
    ("grade", "gradebook"): "file",
    ("grade", "per_student"): "file",
    ("grade", "keep"): "folder",
    ("claims", "update"): "existing file",
    ("claims", "cache"): "folder",
    ("site", "out"): "folder",
    ("audit", "out"): "file",
}


def output_path_error(args: argparse.Namespace) -> str | None:
    """The first output path of ``args`` that cannot be written, as a message naming the flag and
    the fix; None when all can. Checked right after parsing, before any work or import of torch."""
    for (command, dest), kind in OUTPUT_PATHS.items():
        value = getattr(args, dest, None) if args.command == command else None
        if value is None:
            continue
        path, flag = Path(value), "--" + dest.replace("_", "-")
        parent = path.parent if str(path.parent) else Path(".")
        if kind == "existing file":
            if not path.is_file():
                return f"{flag} {value}: no such file; give the file to update (e.g. README.md)"
            continue
        if not parent.is_dir():
            return (
                f"{flag} {value}: the folder {str(parent)!r} does not exist; create it first "
                f"(mkdir -p {shlex.quote(str(parent))}) or give another path"
            )
        if kind == "file" and path.is_dir():
            return f"{flag} {value}: is a folder; give a file name inside it, e.g. {path / 'out'}"
        if kind == "folder" and path.exists() and not path.is_dir():
            return f"{flag} {value}: is a file; give a new or empty folder"
    return None


#: The input paths each subcommand reads: (command, dest) -> "file" or "folder", which must exist.
INPUT_PATHS: dict[tuple[str, str], str] = {
    ("grade", "notebooks"): "file",
    ("grade", "reference"): "file",
    ("grade", "roster"): "file",
    ("build", "solutions"): "folder",
    ("physionet", "data"): "folder",
}


def input_path_error(args: argparse.Namespace) -> str | None:
    """The first input path of ``args`` that does not exist (or is a file where a folder is read, or
    the reverse), as a message naming the argument; None when all are there. Standard library only."""
    for (command, dest), kind in INPUT_PATHS.items():
        value = getattr(args, dest, None) if args.command == command else None
        if value is None:
            continue
        flag = "NOTEBOOK" if dest == "notebooks" else "--" + dest.replace("_", "-")
        for item in value if isinstance(value, list) else [value]:
            path = Path(item)
            if not path.exists():
                return f"{flag} {item}: no such {kind}; check the path (relative to {os.getcwd()})"
            if kind == "file" and path.is_dir():
                return f"{flag} {item}: is a folder; give a file"
            if kind == "folder" and not path.is_dir():
                return f"{flag} {item}: is a file; give a folder"
    return None


def usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with ``args`` beyond each flag's own check (how two flags combine, an input
    that is not there), as a message naming the flag; None when nothing is. Imports no torch: every
    command's arguments are refused before any work starts."""
    refused = input_path_error(args)
    if refused is None and args.command == "grade":
        refused = grade_usage_error(args)
    if refused is None and args.command == "claims":
        if args.json and args.format not in ("text", "json"):
            refused = f"--json and --format={args.format} both given; use one (--json is --format json)"
        elif args.update and (args.format if not args.json else "json") != "markdown":
            refused = "--update writes the Markdown table; add --format markdown"
        else:
            refused = claims_executor_error(args)
    if refused is None and args.command in ("physionet", "audit"):
        from nodecourse.course import audit_cmd, physionet_cmd  # the standard library only

        refused = (physionet_cmd if args.command == "physionet" else audit_cmd).usage_error(args)
    return refused


def unknown_leading_flag(parser: argparse.ArgumentParser, argv: Sequence[str]) -> str | None:
    """The first flag before the command that ``nodecourse`` itself does not know (``nodecourse
    --frobnicate``); None when there is none. argparse would otherwise answer that the command is
    missing, without naming the flag."""
    known = {s for action in parser._actions for s in action.option_strings}
    for item in argv:
        if not item.startswith("-"):
            return None
        if item.split("=", 1)[0] not in known:
            return item
    return None
