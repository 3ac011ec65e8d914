"""The course's three models, trained and ready for the audit (``nodecourse audit --model NAME`` too).

- ``digits-ode`` and ``digits-deq``: lesson 7's neural ODE and DEQ on scikit-learn's digits
  (same frame, same sizes: :func:`nodecourse.lessons.lesson07.build_model`);
- ``physionet-odernn``: lesson 5's ODE-RNN on PhysioNet 2012 set A with a *distribution shift*:
  trained on the coronary-care and surgical ICUs (ICU types 1, 2 and 4), tested on held-out patients
  of those units and, as the shifted set, on the medical ICU (type 3).

Every model is trained by :func:`nodecourse.audit.train`, the loop the audit trains its baseline
with, for the same number of epochs: model and baseline get the same data and the same budget.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import torch
from torch import nn

from nodecourse.audit import SharedInputs, train
from nodecourse.lessons.lesson09.config import (
    COURSE_MODELS,
    ICU_NAMES,
    PHYSIONET_EPOCHS,
    PHYSIONET_HIDDEN,
    PHYSIONET_QUICK_PATIENTS,
    PHYSIONET_QUICK_SHIFT,
    SHIFT_ICU_TYPE,
    TRAIN_ICU_TYPES,
)

__all__ = [
    "CourseModel",
    "course_model",
    "digits_model",
    "icu_types",
    "physionet_model",
    "physionet_shift_split",
    "rows_of",
]


@dataclass
class CourseModel:
    """A trained course model and its data, ready for :func:`nodecourse.audit.audit`.

    ``train``, ``test``, ``shift``: ``(x, y)`` pairs (``shift`` may be None); ``epochs``, ``lr``,
    ``batch_size``: the budget it was trained with (give the same to the audit's baseline);
    ``info``: what the data is; ``train_seconds``; ``unconverged_steps``: training steps whose
    backward pass went through an unconverged fixed-point solve (the DEQ warns about each).
    """

    name: str
    model: nn.Module
    task: str
    train: tuple
    test: tuple
    shift: tuple | None
    epochs: int
    lr: float
    batch_size: int
    info: dict = field(default_factory=dict)
    train_seconds: float = 0.0
    unconverged_steps: int = 0

    def audit_kwargs(self) -> dict:
        """The arguments of :func:`nodecourse.audit.audit` for this model (same budget for the baseline)."""
        return dict(
            train=self.train,
            test=self.test,
            task=self.task,
            shift=self.shift,
            epochs=self.epochs,
            lr=self.lr,
            batch_size=self.batch_size,
            name=self.name,
        )


def _train(model, data, *, task, epochs, lr, batch_size, seed, progress, desc) -> tuple[float, int]:
    """Train with the audit's loop; returns (seconds, training steps that warned of an unconverged solve)."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(
            model, data, task=task, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed, progress=progress, desc=desc
        )
    for w in caught:  # keep what is not the DEQ's per-step note
        if "unconverged" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return time.perf_counter() - start, sum("unconverged" in str(w.message) for w in caught)


def digits_model(kind: str, quick: bool, *, seed: int = 0, progress: bool = False) -> CourseModel:
    """Lesson 7's ``"Neural ODE"`` or ``"DEQ"`` on digits, trained for the capstone's epochs."""
    from nodecourse.data import load_digits
    from nodecourse.lessons import lesson07

    config = lesson07.QUICK_CAPSTONE if quick else lesson07.FULL_CAPSTONE
    data = load_digits(seed=seed, n_samples=config.n_samples)
    torch.manual_seed(seed)
    model = lesson07.build_model(kind, config)
    name = "digits-ode" if kind == "Neural ODE" else "digits-deq"
    seconds, unconverged = _train(
        model,
        (data.x_train, data.y_train),
        task="classification",
        epochs=config.epochs,
        lr=config.lr,
        batch_size=config.batch_size,
        seed=seed,
        progress=progress,
        desc=name,
    )
    info = {
        "data": "scikit-learn digits (8x8)",
        "n_train": len(data.y_train),
        "n_test": len(data.y_test),
        "model": f"lesson 7's {kind}",
        "epochs": config.epochs,
    }
    return CourseModel(
        name,
        model,
        "classification",
        (data.x_train, data.y_train),
        (data.x_test, data.y_test),
        None,
        config.epochs,
        config.lr,
        config.batch_size,
        info,
        seconds,
        unconverged,
    )


def icu_types(data) -> torch.Tensor:
    """ICU type of each patient (1-4; 0 where the record gives none), from the raw descriptors."""
    icu = data.static[:, data.descriptors.index("ICUType")]
    return torch.nan_to_num(icu, nan=0.0).long()


def physionet_shift_split(quick: bool, *, seed: int = 0, test_fraction: float = 0.2):
    """Set A split by ICU type: ``(train, test, shift, normaliser, info)``, raw sets normalised with the
    training split's statistics. ``train``/``test``: patients of :data:`TRAIN_ICU_TYPES` (stratified
    patient split); ``shift``: patients of :data:`SHIFT_ICU_TYPE`. Quick mode samples
    :data:`PHYSIONET_QUICK_PATIENTS` and :data:`PHYSIONET_QUICK_SHIFT` patients."""
    from nodecourse.data import physionet

    data = physionet.load("set-a", progress=False, verbose=False)
    icu = icu_types(data)
    home = data.subset(torch.nonzero(torch.isin(icu, torch.tensor(TRAIN_ICU_TYPES))).flatten())
    away = data.subset(torch.nonzero(icu == SHIFT_ICU_TYPE).flatten())
    if quick:
        home = home.sample(PHYSIONET_QUICK_PATIENTS, seed=seed)
        away = away.sample(PHYSIONET_QUICK_SHIFT, seed=seed)
    parts = home.split(test=test_fraction, seed=seed)
    norm = physionet.Normalizer.fit(parts["train"])
    train_set, test_set, shift_set = (norm.transform(s) for s in (parts["train"], parts["test"], away))
    info = {
        "source": data.report.source,
        "synthetic": data.report.source == "synthetic",
        "train_units": [ICU_NAMES[k] for k in TRAIN_ICU_TYPES],
        "shift_unit": ICU_NAMES[SHIFT_ICU_TYPE],
        "n_train": len(train_set),
        "n_test": len(test_set),
        "n_shift": len(shift_set),
        "mortality": {
            "train": float(train_set.labels.mean()),
            "test": float(test_set.labels.mean()),
            "shift": float(shift_set.labels.mean()),
        },
    }
    return train_set, test_set, shift_set, norm, info


def rows_of(data) -> tuple:
    """A PhysioNet set as the audit's ``(x, y)``: ``x = (values, mask, static, static_mask)``, ``y`` labels."""
    return (data.values, data.mask, data.static, data.static_mask), data.labels


def physionet_model(quick: bool, *, seed: int = 0, progress: bool = False) -> CourseModel:
    """Lesson 5's ODE-RNN (Euler, one-hour steps) trained on the home ICU units, bound to the time grid."""
    from nodecourse.models.latent import ODERNN

    train_set, test_set, shift_set, _, info = physionet_shift_split(quick, seed=seed)
    mode = "quick" if quick else "full"
    torch.manual_seed(seed)
    d, s = train_set.values.shape[-1], train_set.static.shape[-1]
    hidden = PHYSIONET_HIDDEN[mode]
    model = SharedInputs(ODERNN(d, s, hidden_dim=hidden, ode_hidden=hidden), train_set.times)
    epochs, lr, batch = PHYSIONET_EPOCHS[mode], 3e-3, 64
    seconds, _ = _train(
        model,
        rows_of(train_set),
        task="classification",
        epochs=epochs,
        lr=lr,
        batch_size=batch,
        seed=seed,
        progress=progress,
        desc="physionet-odernn",
    )
    info.update(model=f"ODE-RNN (hidden {hidden}, Euler steps of one hour)", epochs=epochs)
    return CourseModel(
        "physionet-odernn",
        model,
        "classification",
        rows_of(train_set),
        rows_of(test_set),
        rows_of(shift_set),
        epochs,
        lr,
        batch,
        info,
        seconds,
    )


def course_model(name: str, quick: bool, *, seed: int = 0, progress: bool = False) -> CourseModel:
    """One of :data:`COURSE_MODELS`, trained."""
    if name == "digits-ode":
        return digits_model("Neural ODE", quick, seed=seed, progress=progress)
    if name == "digits-deq":
        return digits_model("DEQ", quick, seed=seed, progress=progress)
    if name == "physionet-odernn":
        return physionet_model(quick, seed=seed, progress=progress)
    raise ValueError(f"model={name!r} is not one of {COURSE_MODELS}")
