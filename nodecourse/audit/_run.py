"""``audit``: the five steps on a model, one report."""

from __future__ import annotations

import platform
import sys
import time
import traceback
from pathlib import Path

import torch
from torch import nn

from nodecourse.audit import _inputs as I
from nodecourse.audit import _quality as Q
from nodecourse.audit import _step1_baseline as step1_baseline
from nodecourse.audit import _step2_work as step2_work
from nodecourse.audit import _step3_tolerance as step3_tolerance
from nodecourse.audit import _step4_regimes as step4_regimes
from nodecourse.audit import _step5_gradients as step5_gradients
from nodecourse.audit._context import FULL, QUICK, AuditContext
from nodecourse.audit._hook import HookError, SolveHook
from nodecourse.audit._observed import find_solves, training_route
from nodecourse.audit._report import AuditReport, StepResult
from nodecourse.audit._state import kept_as_found
from nodecourse.models import count_parameters
from nodecourse.validation import AnyOf, Arg, Flag, Interval, NoneAllowed, Options, check_args

__all__ = ["audit"]

STEPS = (step1_baseline, step2_work, step3_tolerance, step4_regimes, step5_gradients)
AUDIT_EPOCHS = {"quick": 5, "full": 30}  # the capstone's budgets (lesson 7)

#: The plain arguments of :func:`audit`, declared (nodecourse.validation words the refusals).
AUDIT_ARGS = {
    "task": Arg(Options(Q.AUDIT_TASKS), fix="'classification' (logits), 'regression' (targets) or 'density' (log p)"),
    "quick": Arg(Flag(), fix="nodecourse.config.quick_mode() reads the course's switch"),
    "epochs": Arg(
        AnyOf((Interval(int, 0, None), NoneAllowed())),
        fix="the baseline's training budget: the epochs your model was trained for",
    ),
    "lr": Arg(Interval(float, 0, None, "neither"), fix="e.g. lr=3e-3 (the baseline's Adam)"),
    "batch_size": Arg(Interval(int, 1, None), fix="e.g. batch_size=64"),
    "seed": Arg(Interval(int, 0, 2**32 - 1), fix="e.g. seed=0 (a seed of torch's and numpy's generators)"),
    "progress": Arg(Flag()),
}


def audit(
    model: nn.Module,
    train,
    test,
    *,
    task: str = "classification",
    baseline="auto",
    shift=None,
    quick: bool = False,
    epochs: int | None = None,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
    progress: bool = True,
    name: str | None = None,
    out=None,
) -> AuditReport:
    """Run the five steps of the course's audit on ``model`` and return the :class:`AuditReport`.

    Args:
        model: an ``nn.Module`` as written: its forward may call ``torchdiffeq.odeint``,
            ``torchdiffeq.odeint_adjoint`` (also bound at import: ``from torchdiffeq import
            odeint_adjoint as odeint``), ``nodecourse.odeint`` or a torchdeq DEQ, or hold the library's
            blocks. The solves are found by watching one forward pass (:mod:`nodecourse.audit._hook`)
            and changed on their calls, never in the model's code. It is evaluated, never trained:
            its weights, train/eval modes, ``requires_grad`` flags and torch's global random state
            are as they were afterwards, also after an error.
        train, test: ``(x, y)`` pairs: ``x`` a tensor ``(N, ...)`` or a tuple of batch-first tensors
            (the model is called as ``model(*x)``), ``y`` ``N`` targets (``None`` for ``task="density"``).
            ``train`` trains the baseline and scales the input noise; everything else is measured on ``test``.
        task: ``"classification"`` (logits; one logit per row: binary, scored by AUC), ``"regression"``
            (targets shaped like the output, mean squared error) or ``"density"`` (the model returns
            ``log p(x)`` per row).
        baseline: ``"auto"`` (the solve's explicit counterpart, trained here over seeds: see
            :mod:`~nodecourse.audit._step1_baseline`) or your own trained ``nn.Module`` (used as given).
        shift: ``(x, y)`` from a shifted distribution (step 4 reports the drop), or ``None``.
        quick: fewer inputs, directions and resamples (:data:`nodecourse.audit._context.QUICK`).
        epochs, lr, batch_size, seed: the baseline's training budget: pass the ones your model was
            trained with (default epochs: 5 quick, 30 full, the capstone's).
        progress: progress bars (tqdm) per step, and a line per finished step with its time (stderr).
        name: how the report names the model (default: its class name).
        out: a file name ending in ``.html``, ``.md`` or ``.json``: the report is written there and
            beside it in the other two formats, whatever the steps did (checked before any work).

    Every argument is checked before any training (shapes against one forward pass on two rows of
    each split, labels against the outputs, NaN and inf by split and row); a step that raises is
    reported as ``failed`` with its cause, and the others run.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model is a {type(model).__name__}; give the nn.Module to audit")
    args = check_args(
        dict(task=task, quick=quick, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed, progress=progress),
        AUDIT_ARGS,
    )
    task, quick, epochs, lr, batch_size, seed = (
        args[k] for k in ("task", "quick", "epochs", "lr", "batch_size", "seed")
    )
    out = check_out(out)
    splits = {"train": I.check_pair("train", train, task=task), "test": I.check_pair("test", test, task=task)}
    if shift is not None:
        splits["shift"] = I.check_pair("shift", shift, task=task)
    if not (baseline == "auto" if isinstance(baseline, str) else isinstance(baseline, nn.Module)):
        raise ValueError(
            f"baseline={baseline!r}: give 'auto' (the core's discrete counterpart, trained here) or "
            "a trained nn.Module of your own"
        )
    for split, pair in splits.items():
        I.check_finite(split, pair)
    train, test, shift = splits["train"], splits["test"], splits.get("shift")
    mode = "quick" if quick else "full"
    epochs = AUDIT_EPOCHS[mode] if epochs is None else epochs

    start = time.perf_counter()
    with kept_as_found(model), SolveHook() as hook:
        model.eval()
        probe = _probe_splits(model, splits, task)
        cores = find_solves(model, test[0], hook)
        train_cores, route_info = training_route(model, test[0], hook, cores)
        model.eval()
        metric = Q.metric_for(task, probe)
        ctx = AuditContext(
            model=model,
            cores=cores,
            task=task,
            metric=metric,
            train=train,
            test=test,
            shift=shift,
            baseline=baseline,
            sizes=QUICK if quick else FULL,
            epochs=epochs,
            lr=lr,
            batch_size=batch_size,
            seed=seed,
            progress=progress,
            train_cores=train_cores,
            training_route=route_info,
        )
        steps = [_run_one(module, ctx, k + 1, progress) for k, module in enumerate(STEPS)]
    info = {
        "name": name or type(model).__name__,
        "class": type(model).__name__,
        "parameters": count_parameters(model),
        "cores": [c.describe() for c in cores],
        "settings": [{"path": c.path, "label": c.label, **c.settings()} for c in cores],
        "training_route": _route_text(route_info, train_cores),
    }
    setup = {
        "task": task,
        "metric": metric.name,
        "mode": mode,
        "n_train": I.n_rows(train[0]),
        "n_test": I.n_rows(test[0]),
        "n_shift": I.n_rows(shift[0]) if shift else 0,
        "baseline": "auto" if isinstance(baseline, str) else type(baseline).__name__,
        "epochs": epochs,
        "lr": lr,
        "batch_size": batch_size,
        "seed": seed,
        "sizes": ctx.sizes.__dict__,
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    report = AuditReport(info, setup, steps, time.perf_counter() - start)
    if out is not None:
        report.setup["written"] = [str(p) for p in report.save_all(out)]
    return report


def check_out(out) -> Path | None:
    """``out`` checked before any work: a name ending in .html, .md or .json in a folder that
    exists and can be written (the report would otherwise be lost at the end)."""
    if out is None:
        return None
    if not isinstance(out, (str, Path)):
        raise TypeError(f"out={out!r}: give a file name (a str or a Path) ending in .html, .md or .json")
    path = Path(out)
    if path.suffix.lower() not in (".html", ".htm", ".md", ".json"):
        raise ValueError(f"out={str(out)!r}: give a file name ending in .html, .md or .json")
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ValueError(
            f"out={str(out)!r}: the folder {str(folder)!r} does not exist; create it first "
            f"(mkdir -p {folder}) or write elsewhere"
        )
    import os

    if not os.access(folder, os.W_OK):
        raise ValueError(f"out={str(out)!r}: the folder {str(folder)!r} cannot be written; choose another")
    return path


def _route_text(info: dict, train_cores) -> str:
    """The training pass against the eval pass, in words (the report's header)."""
    if info.get("error"):
        return f"the pass in training mode could not be watched ({info['error']}); the eval route is judged"
    if info.get("same"):
        return "the same solves in training mode as in eval mode"
    return (
        "training mode differs from eval mode: "
        + "; ".join(info["differences"])
        + "; step 5 judges the training route ("
        + "; ".join(c.describe() for c in train_cores)
        + ")"
    )


def _probe_splits(model: nn.Module, splits: dict, task: str) -> torch.Tensor:
    """One forward pass on two rows of each split: the inputs fit the model, every split gives the
    same output shape, and the targets fit the task and the outputs. Returns the test split's outputs."""
    shapes, outs = {}, {}
    for split, pair in splits.items():
        try:
            with torch.no_grad():
                o = I.call(model, I.take(pair[0], slice(0, 2)))
        except HookError:  # the audit's own observation failed: its error names the solve, not the data
            raise
        except Exception as exc:  # the user's model: any error is a wrong input shape or type here
            shapes_in = [tuple(p.shape) for p in I.parts(pair[0])]
            raise ValueError(
                f"{split}: the model fails on the first two rows of {split}'s x (shapes {shapes_in}): "
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}; check "
                f"{split}'s width and layout against the data the model was trained on"
            ) from exc
        if not isinstance(o, torch.Tensor):
            raise TypeError(
                f"{split}: the model returns a {type(o).__name__}; the audit needs one tensor per call "
                "(logits, predictions or log p): wrap the model so its forward returns it"
            )
        shapes[split], outs[split] = tuple(o.shape[1:]), o
        I.check_against_outputs(split, pair, o, task=task)
    if len(set(shapes.values())) > 1:
        raise ValueError(
            f"the model's outputs per row differ between splits: {shapes}; give splits with the same "
            "features (a shift of another width?)"
        )
    return outs["test"]


def _run_one(module, ctx: AuditContext, number: int, progress: bool) -> StepResult:
    """One step; a step that raises becomes a ``failed`` result naming its cause, so the others run."""
    t0 = time.perf_counter()
    try:
        result = module.run_step(ctx)
    except Exception as exc:  # any failure of a step is reported, never lost with the report
        where = traceback.extract_tb(exc.__traceback__)[-1]
        cause = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
        result = StepResult(
            number,
            module.NAME,
            "failed",
            f"Not measured: the step failed ({cause}, at {Path(where.filename).name}:{where.lineno}).",
            {"error": cause, "where": f"{where.filename}:{where.lineno}"},
            reasons=[cause],
            seconds=time.perf_counter() - t0,
        )
    if progress:
        from tqdm.auto import tqdm

        # tqdm.write: in a terminal it prints above any bar still drawn (never through one), and every
        # bar of this step has been closed by now, so the step's line follows its bars in order.
        tqdm.write(
            f"audit: step {number}/{len(STEPS)} ({module.NAME}): {result.verdict}, {result.seconds:.1f} s",
            file=sys.stderr,
        )
        sys.stderr.flush()
    return result
