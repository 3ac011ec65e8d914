"""``nodecourse claims``: the claims ledger run (:mod:`nodecourse.claims`) and written as a table,
JSON, Markdown or HTML, or into a file's ledger block; and the check of its executor's flags.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from nodecourse.course.redirect import StdoutToStderr


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
