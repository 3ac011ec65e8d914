"""The ``nodecourse`` command: lab, grade, check, build, claims, physionet, audit, site.

Each subcommand is a thin layer over a module that does the work
(:mod:`nodecourse.course.grading`, :mod:`nodecourse.course.envcheck`,
:mod:`nodecourse.course.exercise_builder`, :mod:`nodecourse.claims`), imported only
when that subcommand runs, so ``nodecourse --help`` stays fast.

Why this module is long: its parser is one argparse tree of every subcommand (:func:`build_parser`, about 260
lines), so each command's options and help read as one table; the thin ``run_*`` handlers and the argument
errors beside it could move into a private module, a split that is pending.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from nodecourse.course.redirect import StdoutToStderr
from nodecourse.validation import Arg, Interval, argparse_type

START_NOTEBOOK = Path("notebooks") / "00_start_here.ipynb"
#: The path of lesson 0 in JupyterLab: the server's default URL under ``nodecourse lab``.
START_URL = "/lab/tree/" + START_NOTEBOOK.as_posix()

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


def _course_root_or_exit(explicit: str | None) -> Path:
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


# ---------------------------------------------------------------------------
# lab
# ---------------------------------------------------------------------------


def course_bin_dir() -> str:
    """The folder of the Python running the course (``.venv/bin``): where ``nodecourse`` is.

    ``sys.executable`` is taken as it is, symlinks not resolved, since a venv's
    python is a link to the base interpreter, whose folder has no ``nodecourse``.
    """
    return os.path.dirname(sys.executable)


def lab_environment(environ: dict | None = None) -> dict:
    """The environment of the JupyterLab server: ``environ`` (default ``os.environ``) with
    :func:`course_bin_dir` first on ``PATH``, so that ``nodecourse grade ...`` works in
    JupyterLab's terminals and notebooks' ``!`` commands as the lessons spell it."""
    env = dict(os.environ if environ is None else environ)
    bin_dir = course_bin_dir()
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
    env["PATH"] = os.pathsep.join([bin_dir, *rest])
    return env


def _terminal_shell(environ: dict) -> list[str]:
    """The shell of JupyterLab's terminals: the user's, *not* as a login shell.

    Started without a terminal (``make course``, Binder), JupyterLab runs ``$SHELL -l``,
    and a login shell reads /etc/profile, which on Debian-like systems sets PATH
    from scratch and drops the course's bin folder. An interactive shell keeps the
    server's PATH (and still reads ~/.bashrc).
    """
    shell = environ.get("SHELL") or shutil.which("bash") or shutil.which("sh") or "sh"
    return [shell]


# The options through which JupyterLab can be told its address: ours, and jupyter's own
# spellings passed through after `--` (they would otherwise bypass the loopback check).
_IP_OPTIONS = ("--ip", "--ServerApp.ip", "--NotebookApp.ip")


def is_loopback(address: str) -> bool:
    """Whether ``address`` is a loopback address: 127.0.0.0/8, ::1 or ``localhost``.

    Only an address (or ``localhost``) counts: an empty string, ``0.0.0.0``, ``::`` and
    any host name other than ``localhost`` mean (or may resolve to) a network interface.
    """
    import ipaddress

    text = address.strip().strip("[]")  # [::1], as URLs spell IPv6
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def _requested_addresses(args: argparse.Namespace, extra: Sequence[str]) -> list[tuple[str, str]]:
    """Every (option, address) the server would be given: ``--ip`` and jupyter's own spellings in ``extra``."""
    found = [("--ip", args.ip)] if args.ip is not None else []
    items = list(extra)
    for i, item in enumerate(items):
        for name in _IP_OPTIONS:
            if item.startswith(name + "="):
                found.append((name, item.split("=", 1)[1]))
            elif item == name and i + 1 < len(items):
                found.append((name, items[i + 1]))
    return found


def remote_access_error(args: argparse.Namespace, extra: Sequence[str]) -> str | None:
    """The message refusing a non-loopback address without ``--allow-remote``; None when allowed."""
    if getattr(args, "allow_remote", False):
        return None
    for name, address in _requested_addresses(args, extra):
        if not is_loopback(address):
            shown = "every network interface" if address.strip() in ("", "0.0.0.0", "::", "*") else address
            return (
                f"error: {name}={address!r} would make the server listen on {shown}, not only on this "
                "computer (valid without --allow-remote: 127.0.0.0/8, ::1 or localhost). That exposes a "
                "JupyterLab server that runs any code as this user, with this user's files, to anyone who "
                "can reach this machine on the network; its token is the only protection. To keep it "
                f"local, drop {name} or give {name}=127.0.0.1; to expose it on purpose, add --allow-remote."
            )
    return None


def lab_command(args: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    """The JupyterLab command line ``nodecourse lab`` runs (in the course root)."""
    root = _course_root_or_exit(args.root)
    cmd = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}"]
    if not any("terminado_settings" in e for e in extra):  # the user's own choice wins
        shell = json.dumps({"shell_command": _terminal_shell(dict(os.environ))})
        cmd.append(f"--ServerApp.terminado_settings={shell}")
    if (root / START_NOTEBOOK).is_file():
        # The server's URLs land on lesson 0: the one JupyterLab prints (…/lab/tree/…?token=…) and
        # `/` (what `jupyter server list` prints) through the default URL; the page it opens in a
        # local browser through the file to run (relative to root_dir).
        cmd.append(f"--LabApp.default_url={START_URL}")
        cmd.append(str(START_NOTEBOOK))
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
    refused = remote_access_error(args, extra)
    if refused is not None:
        print(refused, file=sys.stderr)
        return 2
    remote = [a for _, a in _requested_addresses(args, extra) if not is_loopback(a)]
    if remote:  # allowed on purpose: still say what it means, once, before the server starts
        print(
            f"warning: --allow-remote: JupyterLab will listen on {remote[0] or 'every interface'!r}; anyone "
            "who can reach it and has the token can run code as this user",
            file=sys.stderr,
        )
    cmd = lab_command(args, extra)
    root = _course_root_or_exit(args.root)
    if args.dry_run:
        print(shlex.join(cmd))
        return 0
    if not (root / START_NOTEBOOK).is_file():
        print(f"warning: {root / START_NOTEBOOK} not found; opening the file browser instead", file=sys.stderr)
    print(
        f"Starting JupyterLab. It prints a URL ending in {START_URL}?token=... below: open that URL (it "
        "opens lesson 0), or paste the token into the login page's 'Password or token' box. In its terminal "
        "(File > New > "
        f"Terminal), `nodecourse` is on the PATH ({course_bin_dir()}).",
        file=sys.stderr,
        flush=True,
    )
    server = subprocess.Popen(cmd, cwd=root, env=lab_environment())

    def forward(signum, frame):
        """Stopping `nodecourse lab` stops JupyterLab (and its kernels) instead of orphaning it."""
        server.send_signal(signum)

    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), forward)
    while True:
        try:
            return server.wait()
        except KeyboardInterrupt:  # Ctrl-C reaches JupyterLab too; it asks, then shuts down
            continue


# ---------------------------------------------------------------------------
# grade, check, build, claims
# ---------------------------------------------------------------------------


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


def run_claims(args: argparse.Namespace) -> int:
    from nodecourse import claims
    from nodecourse.config import quick_mode

    fmt = "json" if args.json else args.format
    if args.json and args.format not in ("text", "json"):
        print(
            f"error: --json and --format={args.format} both given; use one (--json is --format json)", file=sys.stderr
        )
        return 2
    quick = args.quick or quick_mode()
    registry = claims.load_rows()
    if not registry:
        print("error: no claim rows are registered yet (nodecourse/lessons/lessonNN.py)", file=sys.stderr)
        return 1
    if args.only:
        unknown = [i for i in args.only if i not in registry]
        if unknown:  # the message lists the valid ones
            print(f"error: --only: unknown claim id(s) {unknown}; valid ids: {sorted(registry)}", file=sys.stderr)
            return 2
    # The progress bar (on stderr) names the row running; rows that print go to stderr too,
    # so stdout carries only the report.
    with StdoutToStderr():
        results = claims.run_claims(
            args.only,
            quick=quick,
            progress=not args.no_progress,
            keep_going=True,
            executor=args.executor,
            address=args.address,
            workers=args.workers,
            cache_dir=args.cache,
        )
    header = claims.report_header(results, quick=quick)
    header["command"] = (
        "nodecourse claims" + (" --quick" if quick else "") + (" --only " + " ".join(args.only) if args.only else "")
    )
    if args.update:
        if fmt != "markdown":
            print("error: --update writes the Markdown table; add --format markdown", file=sys.stderr)
            return 2
        path = Path(args.update)
        try:
            text = claims.replace_between_markers(
                path.read_text(encoding="utf-8"), claims.format_markdown(results, header, title=None)
            )
        except (OSError, ValueError) as exc:
            print(f"error: --update {path}: {exc}", file=sys.stderr)
            return 2
        path.write_text(text, encoding="utf-8")
        print(f"wrote the ledger table into {path} ({claims.verdict_counts(results)})", file=sys.stderr)
    elif fmt == "json":
        from nodecourse.measure import json_safe

        print(json.dumps([json_safe(r.as_dict()) for r in results], indent=1, ensure_ascii=False))
    elif fmt == "markdown":
        print(claims.format_markdown(results, header), end="")
    elif fmt == "html":
        print(claims.format_html(results, header), end="")
    else:
        print(claims.format_table(results))
        import textwrap

        print(
            textwrap.fill(
                f"({header['mode']} mode, {header['date']}, {header['total time']}; verdicts computed from the "
                "measurements; cells wrap, nothing is cut; --format markdown|html for a report, --json for "
                "every detail)",
                width=80,
            )
        )
    errors = [r.id for r in results if r.verdict is claims.ClaimVerdict.ERROR]
    if errors:
        print(f"error: these rows raised (traceback above): {errors}", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------------
# physionet (its options and work live in nodecourse.course.physionet_cmd)
# ---------------------------------------------------------------------------


def run_site(args: argparse.Namespace) -> int:
    from nodecourse.course import site

    root = _course_root_or_exit(args.root)
    if args.update_readme:
        changed = site.update_readme_badge(root)
        print(f"README.md: Binder badge {'rewritten' if changed else 'already'} for {site.repository_url(root)}")
        return 0
    return site.main(root, Path(args.out) if args.out else root / "site")


def run_physionet(args: argparse.Namespace) -> int:
    from nodecourse.course import physionet_cmd

    return int(physionet_cmd.main(args) or 0)


# ---------------------------------------------------------------------------
# audit (its options and work live in nodecourse.course.audit_cmd)
# ---------------------------------------------------------------------------


def run_audit(args: argparse.Namespace) -> int:
    from nodecourse.course import audit_cmd

    return int(audit_cmd.main(args) or 0)


# ---------------------------------------------------------------------------
# parser
# ---------------------------------------------------------------------------

#: nodecourse.course.grading's DEFAULT_CELL_TIMEOUT_S and DEFAULT_NOTEBOOK_TIMEOUT_S, spelled out so
#: that building the parser imports neither the grader nor torch (a test keeps them equal).
DEFAULT_CELL_TIMEOUT_S = 120
DEFAULT_NOTEBOOK_TIMEOUT_S = 1800

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


def claims_executor_error(args: argparse.Namespace) -> str | None:
    """How ``claims``' --executor, --address and --workers contradict each other, or Ray is missing;
    None when they do not. Finds Ray without importing it (nor torch)."""
    if args.executor != "ray":
        for flag, value in (("--address", args.address), ("--workers", args.workers)):
            if value is not None:
                return f"{flag} applies to --executor ray; add --executor ray or drop {flag}"
        return None
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return "--executor ray needs Ray, which is not installed; pip install 'nodecourse[cluster]'"
    if args.address is not None and not args.address.strip():
        return "--address is empty; give the cluster's address (e.g. --address auto on one of its nodes)"
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
        _course_root_or_exit(args.root)  # a wrong --root is named before torch is imported
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
