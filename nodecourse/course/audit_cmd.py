"""``nodecourse audit``: the five-step audit of one of the course's models.

Examples::

    nodecourse audit --model digits-ode --quick                 # the report as text
    nodecourse audit --model digits-deq --out audit.html        # and one self-contained HTML file
    nodecourse audit --model physionet-odernn --quick --json    # one JSON document on stdout

The model is trained first (the course's recipe: lesson 7's digits models, lesson 5's ODE-RNN on
PhysioNet set A with an ICU-type shift), then audited with the same training budget for the
baseline. Progress bars (one per step) go to stderr; with ``--json`` stdout carries only the report.
Exit status 0 when the audit ran, whatever its verdicts; 1 when it failed.
"""
from __future__ import annotations

import argparse
import sys

from nodecourse.config import quick_mode

DESCRIPTION = ("Audit one of the course's models in five steps: an explicit baseline, solver work per input, a "
               "tolerance sweep, difficult regimes and gradient checks; print the report.")
# The names of nodecourse.lessons.lesson09.COURSE_MODELS, spelled out so that building the CLI's
# parser does not import torch.
MODEL_NAMES = ("digits-ode", "digits-deq", "physionet-odernn")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, choices=MODEL_NAMES,
                        help="digits-ode, digits-deq (lesson 7's models on digits) or physionet-odernn (lesson 5's "
                             "ODE-RNN, trained on three ICU types of set A, shifted set: the medical ICU)")
    parser.add_argument("--quick", action="store_true", help="quick mode (also NODECOURSE_QUICK=1)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="also write the report to FILE: .html (self-contained, figures embedded), .md or .json")
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data split and of training (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def main(args: argparse.Namespace) -> int:
    from nodecourse.course.redirect import StdoutToStderr

    quick = args.quick or quick_mode()
    if args.out is not None and not args.out.lower().endswith((".html", ".htm", ".md", ".json")):
        print(f"error: --out {args.out}: give a file name ending in .html, .md or .json", file=sys.stderr)
        return 2
    progress = not args.no_progress
    with StdoutToStderr():  # a library that prints must not corrupt --json's document
        from nodecourse.audit import audit
        from nodecourse.lessons.lesson09 import course_model

        cm = course_model(args.model, quick, seed=args.seed, progress=progress)
        report = audit(cm.model, quick=quick, seed=args.seed, progress=progress, **cm.audit_kwargs())
        report.setup["model_training"] = {"seconds": round(cm.train_seconds, 1), **cm.info}
        if args.out is not None:
            path = report.save(args.out)
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(report.to_json())
    else:
        print(report)
    return 0
