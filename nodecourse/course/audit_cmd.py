"""``nodecourse audit``: the five-step audit of one of the course's models, or of your own.

Examples::

    nodecourse audit --model digits-ode --quick                 # the report as text
    nodecourse audit --model digits-deq --out audit.html        # and the report as HTML, JSON and Markdown
    nodecourse audit --model physionet-odernn --quick --json    # one JSON document on stdout
    nodecourse audit --model path/to/file.py:build --quick      # your own model, as you wrote it

``file.py:build`` names a function of no arguments in that file returning ``(model, splits, task)``:
``splits`` a dict with ``"train"`` and ``"test"`` (and optionally ``"shift"``), each an ``(x, y)``
pair; ``(model, train, test, task)`` is accepted too. Either may end with a dict of the baseline's
training settings, the ones your model was trained with: ``{"epochs": 30, "lr": 1e-3, "batch_size": 64}``
(any of the three). The model is audited as written (its
``torchdiffeq`` / ``torchdeq`` calls are watched: no glue). A course model is trained first (the
course's recipe), then audited with the same training budget for the baseline. One line per step
with its verdict and time, and progress bars, go to stderr; with ``--json`` stdout carries only
the report. Exit status 0 when the audit ran, whatever its verdicts; 1 when it failed; 2 for a
bad argument.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from nodecourse.config import quick_mode

DESCRIPTION = (
    "Audit a model in five steps: an explicit baseline, solver work per input, a tolerance sweep, "
    "difficult regimes and gradient checks; print the report. A course model by name, or your own "
    "as path/to/file.py:build."
)
# The names of nodecourse.lessons.lesson09.COURSE_MODELS, spelled out so that building the CLI's
# parser does not import torch.
MODEL_NAMES = ("digits-ode", "digits-deq", "physionet-odernn")
SEED_MAX = 2**32 - 1
_FILE_SPEC = re.compile(r"^(?P<path>.+\.py):(?P<func>[A-Za-z_][A-Za-z0-9_]*)$")


def model_arg(text: str) -> str:
    """``--model``: a course model's name or ``path/to/file.py:build`` (the file must exist)."""
    if text in MODEL_NAMES:
        return text
    m = _FILE_SPEC.match(text)
    if m is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither a course model ({', '.join(MODEL_NAMES)}) nor your own as path/to/file.py:build "
            "(a file and the function in it that returns (model, splits, task))"
        )
    if not Path(m["path"]).is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: no file {m['path']!r}; give path/to/file.py:build")
    return text


def seed_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; e.g. --seed 0") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"{value} is out of range: it must be between 0 and {SEED_MAX}; e.g. --seed 0")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        type=model_arg,
        metavar="NAME|FILE.py:FUNC",
        help="digits-ode, digits-deq (lesson 7's models on digits), physionet-odernn (lesson 5's "
        "ODE-RNN, trained on three ICU types of set A, shifted set: the medical ICU), or "
        "path/to/file.py:build (your own: build() returns (model, splits, task))",
    )
    parser.add_argument("--quick", action="store_true", help="quick mode (also NODECOURSE_QUICK=1)")
    parser.add_argument(
        "--out",
        default=None,
        metavar="FILE",
        help="also write the report to FILE (.html, .md or .json) and beside it in the other two "
        "formats; the folder must exist",
    )
    parser.add_argument("--json", action="store_true", help="print the report as one JSON document")
    parser.add_argument(
        "--seed", type=seed_arg, default=0, help=f"seed of the data split and of training, 0 to {SEED_MAX} (default 0)"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress on stderr")


BASELINE_SETTINGS = ("epochs", "lr", "batch_size")  # what build() may set of the baseline's training


def load_build(spec: str):
    """``path/to/file.py:build`` -> what ``build()`` returns, as ``(model, kwargs for audit)``."""
    import importlib.util

    m = _FILE_SPEC.match(spec)
    path = Path(m["path"]).resolve()
    name = f"nodecourse_user_model_{abs(hash(str(path)))}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent))  # the file may import its neighbours
    try:
        module_spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    build = getattr(module, m["func"], None)
    if not callable(build):
        raise ValueError(f"--model {spec}: {path.name} has no function {m['func']!r}")
    result = build()
    settings = {}
    if isinstance(result, tuple) and len(result) >= 4 and isinstance(result[-1], dict):
        if not {"train", "test"} <= set(result[-1]):  # a trailing dict that is not the splits: baseline settings
            settings, result = result[-1], result[:-1]
            unknown = set(settings) - set(BASELINE_SETTINGS)
            if unknown:
                raise ValueError(
                    f"--model {spec}: the baseline settings {sorted(settings)} hold {sorted(unknown)}; give any "
                    f"of {', '.join(BASELINE_SETTINGS)} (the budget your model was trained with)"
                )
    if isinstance(result, tuple) and len(result) == 3 and isinstance(result[1], dict):
        model, splits, task = result
        unknown = set(splits) - {"train", "test", "shift"}
        if unknown or not {"train", "test"} <= set(splits):
            raise ValueError(
                f"--model {spec}: splits has keys {sorted(splits)}; give 'train' and 'test' "
                "(and optionally 'shift'), each an (x, y) pair"
            )
        return model, dict(train=splits["train"], test=splits["test"], shift=splits.get("shift"), task=task, **settings)
    if isinstance(result, tuple) and len(result) in (4, 5):
        model, train, test, task, *shift = result
        return model, dict(train=train, test=test, task=task, shift=shift[0] if shift else None, **settings)
    raise ValueError(
        f"--model {spec}: {m['func']}() returned {type(result).__name__}; return (model, splits, task) "
        "with splits = {'train': (x, y), 'test': (x, y)}"
    )


def usage_error(args: argparse.Namespace) -> str | None:
    """What is wrong with ``args`` beyond each flag's own parser check, as a message naming the
    flag; None when nothing is. Needs no torch (the CLI calls it before importing it)."""
    if args.out is not None and not args.out.lower().endswith((".html", ".htm", ".md", ".json")):
        return f"--out {args.out}: give a file name ending in .html, .md or .json"
    return None


def main(args: argparse.Namespace) -> int:
    from nodecourse.course.redirect import StdoutToStderr

    quick = args.quick or quick_mode()
    refused = usage_error(args)  # the CLI checked it before importing torch; callers of main() get it too
    if refused is not None:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    if args.out is not None and not Path(args.out).resolve().parent.is_dir():
        print(
            f"error: --out {args.out}: the folder {str(Path(args.out).parent)!r} does not exist; create it first",
            file=sys.stderr,
        )
        return 2
    progress = not args.no_progress
    with StdoutToStderr():  # a library that prints must not corrupt --json's document
        from nodecourse.audit import audit  # torch is imported here, after the arguments are parsed

        if args.model in MODEL_NAMES:
            from nodecourse.lessons.lesson09 import course_model

            cm = course_model(args.model, quick, seed=args.seed, progress=progress)
            model, kwargs, extra = cm.model, cm.audit_kwargs(), {"seconds": round(cm.train_seconds, 1), **cm.info}
        else:
            try:
                model, kwargs = load_build(args.model)
            except ValueError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 2
            kwargs["name"], extra = args.model.rsplit(":", 1)[0], None
        try:
            report = audit(model, quick=quick, seed=args.seed, progress=progress, out=args.out, **kwargs)
        except (ValueError, TypeError) as exc:  # a refused argument: named before any training
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if extra is not None:
            report.setup["model_training"] = extra
        for path in report.setup.get("written", []):
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(report.to_json())
    else:
        print(report)
    return 0
