"""``nodecourse physionet``: train one model on PhysioNet 2012 and print the evaluation AUC.

Examples::

    nodecourse physionet --model odernn --eval split --seed 0          # set A, 80/20 patient split
    nodecourse physionet --model summary-logreg --train set-a --eval set-b --json
    nodecourse physionet --model gru-dt --quick                         # 600 patients, 3 epochs
    nodecourse physionet --model gru-d --eval split --seed 1            # GRU-D (Che et al. 2018)
    nodecourse physionet --model odernn --settings published --quick --json   # Rubanova et al.'s settings

``--settings published`` trains with :data:`nodecourse.models.PHYSIONET_PUBLISHED`
(minute grid, the published sizes, Adamax 1e-2 decayed per batch, batches of 50, 100 epochs);
``--quick`` keeps those shapes, optimiser and schedule and cuts patients and epochs only.

``--json`` prints one JSON object: ``auc``, ``n_train``, ``n_eval``, ``seconds`` (training and
scoring, not loading), and the model, seed, data source, epochs and solver work, and
``settings`` (the values trained with: the settings' name and fields, as actually used).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings

from nodecourse.config import quick_mode
from nodecourse.validation import Arg, Interval, argparse_type

DESCRIPTION = "Train one model on PhysioNet 2012 (in-hospital mortality) and print its evaluation AUC."
# The model names of nodecourse.models.latent.MODELS, spelled out so that building the
# CLI's parser does not import torch (a test keeps the two in step).
MODEL_NAMES = ("odernn", "latent-ode", "gru-dt", "gru-d", "summary-logreg")
# nodecourse.data.physionet.HORIZON_HOURS, spelled out for the same reason (a test keeps them equal).
HORIZON_HOURS = 48.0
QUICK_PATIENTS = 600
DEFAULT_EPOCHS = {"odernn": 20, "gru-dt": 20, "gru-d": 20, "latent-ode": 20, "summary-logreg": 0}
QUICK_EPOCHS = 3
SETTINGS_NAMES = ("course", "published")
# Quick mode at the published settings: minute grid makes every batch ~2,000 short solves,
# so fewer patients than the course's quick mode; the shapes and optimiser are kept.
QUICK_PUBLISHED_PATIENTS = 120
QUICK_PUBLISHED_EPOCHS = 1

#: The numeric flags, declared once: argparse refuses a value outside the range with the
#: library's wording (``argument --batch-size: 0 is out of range: it must be >= 1``).
FLAGS: dict[str, Arg] = {
    "--test-fraction": Arg(Interval(float, 0, 1, "neither"), fix="e.g. --test-fraction 0.2"),
    "--val-fraction": Arg(Interval(float, 0, 1, "left"), fix="e.g. --val-fraction 0.1 (0: no validation set)"),
    "--seed": Arg(Interval(int, 0, 2**32 - 1), fix="e.g. --seed 0"),
    "--epochs": Arg(Interval(int, 0, None), fix="e.g. --epochs 20 (0: evaluate the untrained model)"),
    "--batch-size": Arg(Interval(int, 1, None), fix="e.g. --batch-size 64"),
    "--quantization": Arg(
        Interval(float, 1 / 60, HORIZON_HOURS, unit="(hours)"), fix="e.g. --quantization 1.0 (1/60: one minute)"
    ),
    "--patients": Arg(Interval(int, 1, None), fix="e.g. --patients 600"),
    "--threads": Arg(Interval(int, 1, None), fix="e.g. --threads 2"),
}


_DEVICE_NAME = re.compile(r"^(auto|(cpu|cuda|mps)(:[0-9]+)?)$")


def device_arg(text: str) -> str:
    """``--device``: checked by its spelling only (cpu, cuda, cuda:N, mps, auto), so that a typo is
    refused before torch is imported; whether the device is on this machine is checked after."""
    if _DEVICE_NAME.match(text) is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a device; give cpu, cuda, cuda:N, mps or auto")
    return text


def usage_error(args: argparse.Namespace) -> str | None:
    """How two flags of ``args`` contradict each other, as a message naming them; None when they
    do not. Each flag's own range is the parser's (:data:`FLAGS`); this needs no torch."""
    if args.eval == args.train:
        return f"--eval {args.eval} is the training set; use --eval split to hold out patients of it"
    if args.eval == "split" and args.val_fraction + args.test_fraction >= 1:
        return (
            f"--val-fraction {args.val_fraction} with --test-fraction {args.test_fraction} leaves no "
            f"training patients: keep their sum below 1"
        )
    return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--data",
        metavar="DIR",
        default=None,
        help="folder holding set-X.tar.gz (or set-X/) and Outcomes-X.txt; default: "
        "NODECOURSE_DATA, then ../shared/physionet2012, else the synthetic stand-in",
    )
    parser.add_argument("--train", default="set-a", choices=["set-a", "set-b"], help="set to train on")
    parser.add_argument(
        "--eval",
        default="split",
        choices=["set-a", "set-b", "split"],
        help="set to evaluate on, or 'split' for a held-out patient split of the training set",
    )
    parser.add_argument(
        "--test-fraction",
        type=argparse_type(FLAGS["--test-fraction"]),
        default=0.2,
        help="fraction of patients held out with --eval split (default 0.2)",
    )
    parser.add_argument(
        "--val-fraction",
        type=argparse_type(FLAGS["--val-fraction"]),
        default=0.0,
        help="fraction of all training-set patients kept aside to pick the best epoch "
        "(default 0: train on all of them and keep the last epoch)",
    )
    parser.add_argument(
        "--model",
        required=True,
        choices=MODEL_NAMES,
        help="odernn, latent-ode (Rubanova et al. 2019), gru-dt (GRU with the time since the last "
        "observation), gru-d (Che et al. 2018: input and hidden-state decay), summary-logreg",
    )
    parser.add_argument(
        "--seed", type=argparse_type(FLAGS["--seed"]), default=0, help="seed of the split and of training"
    )
    parser.add_argument(
        "--epochs",
        type=argparse_type(FLAGS["--epochs"]),
        default=None,
        help="training epochs (default: 20 full, 3 quick)",
    )
    parser.add_argument(
        "--batch-size",
        type=argparse_type(FLAGS["--batch-size"]),
        default=None,
        help="default: 64, or the settings' (50) with --settings published",
    )
    parser.add_argument(
        "--quantization",
        type=argparse_type(FLAGS["--quantization"]),
        default=None,
        help="time grid in hours (default: 1.0, or 1/60 with --settings published)",
    )
    parser.add_argument(
        "--settings",
        default="course",
        choices=SETTINGS_NAMES,
        help="course (default: the course's sizes and schedule) or published (Rubanova et al. "
        "2019's, each value with its source in nodecourse.models._physionet_settings)",
    )
    parser.add_argument(
        "--patients",
        type=argparse_type(FLAGS["--patients"]),
        default=None,
        help="use a seeded subset of this many training-set patients (quick: 600)",
    )
    parser.add_argument("--download", action="store_true", help="download from PhysioNet if no local copy")
    parser.add_argument("--quick", action="store_true", help="quick mode (also NODECOURSE_QUICK=1)")
    parser.add_argument(
        "--threads",
        type=argparse_type(FLAGS["--threads"]),
        default=None,
        help="torch CPU threads (default: the course's choice, shown by `nodecourse check`)",
    )
    parser.add_argument("--device", type=device_arg, default="cpu", help="cpu, cuda, cuda:N, mps or auto (default cpu)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _fail(msg: str) -> int:
    """Print ``msg`` as one line on stderr; return the exit code 2."""
    print("error: " + " ".join(str(msg).split()), file=sys.stderr)
    return 2


def _settings_report(name: str, epochs: int, batch_size: int, quantization: float) -> dict:
    """The settings' values as trained with (epochs, batch size and grid as actually used)."""
    from nodecourse.models import physionet_settings

    values = physionet_settings(name).as_dict()
    values.update(epochs=epochs, batch_size=batch_size, quantization_hours=quantization)
    return values


def main(args: argparse.Namespace) -> int:
    import torch

    from nodecourse.config import resolve_device
    from nodecourse.data import physionet
    from nodecourse.models import physionet_settings
    from nodecourse.models.latent import fit_mortality

    quick = args.quick or quick_mode()
    refused = usage_error(args)  # the CLI checked it before importing torch; callers of main() get it too
    if refused is not None:
        return _fail(refused)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    try:
        device = resolve_device(args.device)
    except ValueError as exc:
        return _fail(str(exc))
    published = args.settings == "published"
    settings = physionet_settings(args.settings) if published else None  # course: fit's own path, unchanged
    if published:
        default_epochs = QUICK_PUBLISHED_EPOCHS if quick else settings.epochs
        default_patients = QUICK_PUBLISHED_PATIENTS if quick else None
    else:
        default_epochs = QUICK_EPOCHS if quick else DEFAULT_EPOCHS[args.model]
        default_patients = QUICK_PATIENTS if quick else None
    if args.model == "summary-logreg":
        default_epochs = 0
    epochs = args.epochs if args.epochs is not None else default_epochs
    n_patients = args.patients if args.patients is not None else default_patients
    quantization = (
        args.quantization if args.quantization is not None else (settings.quantization_hours if published else 1.0)
    )
    batch_size = args.batch_size if args.batch_size is not None else (settings.batch_size if published else 64)

    verbose = not args.json
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = physionet.load(
                args.train,
                path=args.data,
                quantization=quantization,
                download=args.download,
                progress=verbose,
                verbose=verbose,
            )
            synthetic = data.report.source == "synthetic"
            if n_patients is not None:
                data = data.sample(n_patients, seed=args.seed)
            val_raw = None
            if args.eval == "split":
                parts = data.split(test=args.test_fraction, val=args.val_fraction, seed=args.seed)
                train_raw, val_raw, eval_raw = parts["train"], parts.get("val"), parts["test"]
            else:
                parts = data.split(test=0.0, val=args.val_fraction, seed=args.seed)
                train_raw, val_raw = parts["train"], parts.get("val")
                eval_raw = physionet.load(
                    args.eval,
                    path=args.data,
                    quantization=quantization,
                    download=args.download,
                    allow_synthetic=synthetic,
                    progress=verbose,
                    verbose=verbose,
                )
    except (physionet.PhysioNetError, OSError, ValueError, RuntimeError) as exc:
        # every loader error (damaged archive, no usable record, failed download, a
        # split that cannot be made) is one line and exit code 2, never a traceback
        return _fail(f"{type(exc).__name__}: {exc}")
    for w in caught:  # the synthetic warning must be seen, also with --json (on stderr)
        print(f"warning: {w.message}", file=sys.stderr)

    norm = physionet.Normalizer.fit(train_raw)
    train = norm.transform(train_raw).to(device)
    evaluation = norm.transform(eval_raw).to(device)
    val = norm.transform(val_raw).to(device) if val_raw is not None else None
    start = time.perf_counter()
    _, result = fit_mortality(
        args.model,
        train,
        evaluation,
        val=val,
        epochs=epochs,
        batch_size=batch_size,
        seed=args.seed,
        progress=verbose,
        settings=settings,
    )
    seconds = time.perf_counter() - start
    out = {
        "auc": round(result.auc, 4),
        "n_train": result.n_train,
        "n_eval": result.n_eval,
        "n_val": len(val) if val is not None else 0,
        "best_epoch": result.best_epoch,
        "seconds": round(seconds, 1),
        "cpu_seconds": round(result.cpu_seconds, 1),
        "model": args.model,
        "seed": args.seed,
        "epochs": epochs,
        "mode": "quick" if quick else "full",
        "train": args.train,
        "eval": args.eval,
        "data_source": data.report.source,
        "synthetic": synthetic,
        "skipped_records": data.report.n_skipped,
        "missing_records": len(data.report.missing),
        "threads": torch.get_num_threads(),
        "solver": result.solver,
        "settings": _settings_report(args.settings, epochs, batch_size, quantization),
    }
    if args.json:
        print(json.dumps(out))
    else:
        label = " (SYNTHETIC data)" if synthetic else ""
        print(
            f"{args.model}: AUC {out['auc']:.4f} on {out['n_eval']} patients ({args.eval}), "
            f"trained on {out['n_train']} ({args.train}){label}, {args.settings} settings, {out['epochs']} epochs, "
            f"{out['seconds']:.1f} s on {out['threads']} thread(s) ({out['cpu_seconds']:.1f} s CPU)"
        )
        if result.solver:
            s = result.solver
            print(
                f"solver: {s['method']} step {s['step_size_hours']} h, {s['train_nfe']} NFE in training "
                f"({s['nfe_per_training_batch']:.0f} per batch)"
            )
    return 0
