"""``audit``: the five steps on a model, one report."""
from __future__ import annotations

import platform
import time

import torch
from torch import nn

from nodecourse.audit import inputs as I
from nodecourse.audit import quality as Q
from nodecourse.audit import step1_baseline, step2_work, step3_tolerance, step4_regimes, step5_gradients
from nodecourse.audit.context import FULL, QUICK, AuditContext
from nodecourse.audit.discovery import find_cores
from nodecourse.audit.report import AuditReport
from nodecourse.models import count_parameters
from nodecourse.validation import AnyOf, Arg, Flag, Interval, NoneAllowed, Options, check_args

STEPS = (step1_baseline, step2_work, step3_tolerance, step4_regimes, step5_gradients)
DEFAULT_EPOCHS = {"quick": 5, "full": 30}  # the capstone's budgets (lesson 7)

#: The plain arguments of :func:`audit`, declared (nodecourse.validation words the refusals).
AUDIT_ARGS = {
    "task": Arg(Options(Q.TASKS), fix="'classification' (logits), 'regression' (targets) or 'density' (log p)"),
    "quick": Arg(Flag(), fix="nodecourse.config.quick_mode() reads the course's switch"),
    "epochs": Arg(AnyOf((Interval(int, 0, None), NoneAllowed())),
                  fix="the baseline's training budget: the epochs your model was trained for"),
    "lr": Arg(Interval(float, 0, None, "neither"), fix="e.g. lr=3e-3 (the baseline's Adam)"),
    "batch_size": Arg(Interval(int, 1, None), fix="e.g. batch_size=64"),
    "seed": Arg(Interval(int, 0, None), fix="e.g. seed=0"),
    "progress": Arg(Flag()),
}


def audit(model: nn.Module, train, test, *, task: str = "classification", baseline="auto", shift=None,
          quick: bool = False, epochs: int | None = None, lr: float = 3e-3, batch_size: int = 64, seed: int = 0,
          progress: bool = True, name: str | None = None) -> AuditReport:
    """Run the five steps of the course's audit on ``model`` and return the :class:`AuditReport`.

    Args:
        model: an ``nn.Module`` holding at least one of the library's continuous or implicit cores
            (:func:`nodecourse.audit.find_cores`); a torchdiffeq model through
            :class:`nodecourse.audit.TorchdiffeqBlock`. It is evaluated, never trained or changed
            (its settings are restored after each measurement).
        train, test: ``(x, y)`` pairs: ``x`` a tensor ``(N, ...)`` or a tuple of batch-first tensors
            (the model is called as ``model(*x)``), ``y`` ``N`` targets (``None`` for ``task="density"``).
            ``train`` trains the baseline and scales the input noise; everything else is measured on ``test``.
        task: ``"classification"`` (logits; one logit per row: binary, scored by AUC), ``"regression"``
            (mean squared error) or ``"density"`` (the model returns ``log p(x)`` per row).
        baseline: ``"auto"`` (the core's discrete counterpart at matched parameters, trained here with
            the same data and budget) or your own trained ``nn.Module`` (used as given).
        shift: ``(x, y)`` from a shifted distribution (step 4 reports the drop), or ``None``.
        quick: fewer inputs, directions and resamples (:data:`nodecourse.audit.context.QUICK`): a look
            in a minute or two; the full sizes are :data:`~nodecourse.audit.context.FULL`.
        epochs, lr, batch_size, seed: the baseline's training budget: pass the ones your model was
            trained with (default epochs: 5 quick, 30 full, the capstone's).
        progress: progress bars (tqdm) per step.
        name: how the report names the model (default: its class name).
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model is a {type(model).__name__}; give the nn.Module to audit")
    args = check_args(dict(task=task, quick=quick, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed,
                           progress=progress), AUDIT_ARGS)
    task, quick, epochs, lr, batch_size, seed = (args[k] for k in ("task", "quick", "epochs", "lr", "batch_size",
                                                                   "seed"))
    cores = find_cores(model)
    train = I.check_pair("train", train, task=task)
    test = I.check_pair("test", test, task=task)
    if shift is not None:
        shift = I.check_pair("shift", shift, task=task)
    if not (baseline == "auto" if isinstance(baseline, str) else isinstance(baseline, nn.Module)):
        raise ValueError(f"baseline={baseline!r}: give 'auto' (the core's discrete counterpart, trained here) or "
                         "a trained nn.Module of your own")
    mode = "quick" if quick else "full"
    epochs = DEFAULT_EPOCHS[mode] if epochs is None else epochs

    was_training = model.training
    model.eval()
    start = time.perf_counter()
    try:
        with torch.no_grad():
            probe = I.call(model, I.take(test[0], slice(0, 2)))
        metric = Q.metric_for(task, probe)
        ctx = AuditContext(model=model, cores=cores, task=task, metric=metric, train=train, test=test, shift=shift,
                           baseline=baseline, sizes=QUICK if quick else FULL, epochs=epochs, lr=lr,
                           batch_size=batch_size, seed=seed, progress=progress)
        from tqdm.auto import tqdm

        steps = []
        bar = tqdm(STEPS, desc="audit", disable=not progress, unit="step")
        for module in bar:
            bar.set_description(f"audit: step {len(steps) + 1} ({module.NAME})")
            steps.append(module.run_step(ctx))
        bar.close()
    finally:
        model.train(was_training)
    info = {"name": name or type(model).__name__, "class": type(model).__name__,
            "parameters": count_parameters(model), "cores": [c.describe() for c in cores],
            "settings": [{"path": c.path, "label": c.label, **c.settings()} for c in cores]}
    setup = {"task": task, "metric": metric.name, "mode": mode, "n_train": I.n_rows(train[0]),
             "n_test": I.n_rows(test[0]), "n_shift": I.n_rows(shift[0]) if shift else 0,
             "baseline": "auto" if isinstance(baseline, str) else type(baseline).__name__,
             "epochs": epochs, "lr": lr, "batch_size": batch_size, "seed": seed,
             "sizes": ctx.sizes.__dict__, "torch": torch.__version__, "threads": torch.get_num_threads(),
             "python": platform.python_version(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    return AuditReport(info, setup, steps, time.perf_counter() - start)
