"""Lesson 9: audit your model. The course's three models, their data and training, and two planted faults.

The audit itself is library code (:mod:`nodecourse.audit`); this module holds what the lesson and
``nodecourse audit --model NAME`` run it on:

- ``digits-ode`` and ``digits-deq``: lesson 7's neural ODE and DEQ on scikit-learn's digits
  (same frame, same sizes: :func:`nodecourse.lessons.lesson07.build_model`);
- ``physionet-odernn``: lesson 5's ODE-RNN on PhysioNet 2012 set A with a *distribution shift*:
  trained on the coronary-care and surgical ICUs (ICU types 1, 2 and 4), tested on held-out patients
  of those units and, as the shifted set, on the medical ICU (type 3);
- two planted faults with known answers (the exercise and the tests use them):
  :func:`rotating_classifier`, whose accuracy collapses when the solve is loosened, and
  :func:`long_horizon_regressor`, a long-horizon linear field with a fast decaying mode rotated into
  every coordinate, whose adjoint gradient is wrong (lesson 4's controlled problem as a model).

Every model is trained by :func:`nodecourse.audit.train`, the loop the audit trains its baseline
with, for the same number of epochs: model and baseline get the same data and the same budget.
"""
from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import torch
from torch import nn

from nodecourse.audit import SharedInputs, train
from nodecourse.models import ODEBlock

COURSE_MODELS = ("digits-ode", "digits-deq", "physionet-odernn")
ICU_NAMES = {1: "coronary care", 2: "cardiac surgery recovery", 3: "medical", 4: "surgical"}
TRAIN_ICU_TYPES = (1, 2, 4)
SHIFT_ICU_TYPE = 3
PHYSIONET_QUICK_PATIENTS = 600  # training-unit patients in quick mode (lesson 5's quick size)
PHYSIONET_QUICK_SHIFT = 200  # shifted patients in quick mode
PHYSIONET_EPOCHS = {"quick": 3, "full": 20}  # `nodecourse physionet`'s budgets
PHYSIONET_HIDDEN = {"quick": 32, "full": 64}


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
        return dict(train=self.train, test=self.test, task=self.task, shift=self.shift, epochs=self.epochs,
                    lr=self.lr, batch_size=self.batch_size, name=self.name)


def _train(model, data, *, task, epochs, lr, batch_size, seed, progress, desc) -> tuple[float, int]:
    """Train with the audit's loop; returns (seconds, training steps that warned of an unconverged solve)."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train(model, data, task=task, epochs=epochs, lr=lr, batch_size=batch_size, seed=seed, progress=progress,
              desc=desc)
    for w in caught:  # keep what is not the DEQ's per-step note
        if "unconverged" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return time.perf_counter() - start, sum("unconverged" in str(w.message) for w in caught)


def digits_model(kind: str, quick: bool, *, seed: int = 0, progress: bool = False) -> CourseModel:
    """Lesson 7's ``"Neural ODE"`` or ``"DEQ"`` on digits, trained for the capstone's epochs."""
    from nodecourse.data.digits import load_digits
    from nodecourse.lessons import lesson07

    config = lesson07.QUICK_CAPSTONE if quick else lesson07.FULL_CAPSTONE
    data = load_digits(seed=seed, n_samples=config.n_samples)
    torch.manual_seed(seed)
    model = lesson07.build_model(kind, config)
    name = "digits-ode" if kind == "Neural ODE" else "digits-deq"
    seconds, unconverged = _train(model, (data.x_train, data.y_train), task="classification", epochs=config.epochs,
                                  lr=config.lr, batch_size=config.batch_size, seed=seed, progress=progress,
                                  desc=name)
    info = {"data": "scikit-learn digits (8x8)", "n_train": len(data.y_train), "n_test": len(data.y_test),
            "model": f"lesson 7's {kind}", "epochs": config.epochs}
    return CourseModel(name, model, "classification", (data.x_train, data.y_train), (data.x_test, data.y_test),
                       None, config.epochs, config.lr, config.batch_size, info, seconds, unconverged)


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
    info = {"source": data.report.source, "synthetic": data.report.source == "synthetic",
            "train_units": [ICU_NAMES[k] for k in TRAIN_ICU_TYPES], "shift_unit": ICU_NAMES[SHIFT_ICU_TYPE],
            "n_train": len(train_set), "n_test": len(test_set), "n_shift": len(shift_set),
            "mortality": {"train": float(train_set.labels.mean()), "test": float(test_set.labels.mean()),
                          "shift": float(shift_set.labels.mean())}}
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
    seconds, _ = _train(model, rows_of(train_set), task="classification", epochs=epochs, lr=lr, batch_size=batch,
                        seed=seed, progress=progress, desc="physionet-odernn")
    info.update(model=f"ODE-RNN (hidden {hidden}, Euler steps of one hour)", epochs=epochs)
    return CourseModel("physionet-odernn", model, "classification", rows_of(train_set), rows_of(test_set),
                       rows_of(shift_set), epochs, lr, batch, info, seconds)


def course_model(name: str, quick: bool, *, seed: int = 0, progress: bool = False) -> CourseModel:
    """One of :data:`COURSE_MODELS`, trained."""
    if name == "digits-ode":
        return digits_model("Neural ODE", quick, seed=seed, progress=progress)
    if name == "digits-deq":
        return digits_model("DEQ", quick, seed=seed, progress=progress)
    if name == "physionet-odernn":
        return physionet_model(quick, seed=seed, progress=progress)
    raise ValueError(f"model={name!r} is not one of {COURSE_MODELS}")


# --- planted faults ---------------------------------------------------------------------------


class LinearField(nn.Module):
    """``f(t, z) = A z`` with ``A = Q diag(rates) Q^T`` (``Q`` the rotation by ``angle``), ``A`` trainable."""

    def __init__(self, rates=(-10.0, -0.1), angle: float = 0.7, dtype=torch.float64):
        super().__init__()
        c, s = math.cos(angle), math.sin(angle)
        q = torch.tensor([[c, -s], [s, c]], dtype=dtype)
        self.A = nn.Parameter(q @ torch.diag(torch.tensor(rates, dtype=dtype)) @ q.T)

    def forward(self, t, z):
        return z @ self.A.T


class Readout(nn.Module):
    """``x -> readout(block(x))``: a solve followed by a linear map (the planted models' frame)."""

    def __init__(self, block: ODEBlock, readout: nn.Module):
        super().__init__()
        self.block = block
        self.readout = readout

    def forward(self, x):
        return self.readout(self.block(x))


def long_horizon_regressor(gradient: str = "adjoint", *, T: float = 3.0, tol: float = 1e-6, seed: int = 0):
    """A planted fault: ``dz/dt = A z`` on ``[0, T]`` (rates -10 and -0.1, rotated 0.7 rad: the fast decaying
    mode sits in every coordinate), dopri5 at ``rtol = atol = tol``, then a linear readout; float64.

    Returns ``(model, (x_train, y_train), (x_test, y_test))``: targets are the model's own outputs
    plus a little noise, so the model is trained; only its gradient route differs. The adjoint must
    recover ``z(t)`` by solving backwards, where the fast mode grows by ``e^(10 T)``: its gradient is
    wrong by orders of magnitude, while ``"checkpoint"`` (the forward steps replayed) is exact.
    """
    g = torch.Generator().manual_seed(seed)
    model = Readout(ODEBlock(LinearField(), t1=T, method="dopri5", rtol=tol, atol=tol, gradient=gradient),
                    nn.Linear(2, 1).double())
    x = torch.randn(96, 2, generator=g, dtype=torch.float64)
    with torch.no_grad():
        y = model(x) + 0.01 * torch.randn(96, 1, generator=g, dtype=torch.float64)
    return model, (x[:64], y[:64]), (x[64:], y[64:])


class Rotation(nn.Module):
    """``f(t, z) = ω J z`` (``J`` the quarter turn): the state turns at ``ω`` radians per unit time."""

    def __init__(self, omega: float):
        super().__init__()
        self.omega = nn.Parameter(torch.tensor(float(omega)))

    def forward(self, t, z):
        return self.omega * torch.stack([-z[..., 1], z[..., 0]], dim=-1)


def rotating_classifier(*, omega: float = 60.0, tol: float = 1e-3, n: int = 400, seed: int = 0):
    """A planted fault: points on the plane turn by ``omega`` radians (almost ten turns) under dopri5 at
    ``rtol = atol = tol``; the class is the side of a line the point ends on. The labels are the
    exact answer, so the model is right when its solve is accurate and wrong when its phase
    drifts: its accuracy collapses once the tolerance is loosened.

    Returns ``(model, (x_train, y_train), (x_test, y_test))`` (float32, two logits per row).
    """
    g = torch.Generator().manual_seed(seed)
    readout = nn.Linear(2, 2)
    with torch.no_grad():
        readout.weight.copy_(torch.tensor([[1.0, 0.0], [-1.0, 0.0]]))
        readout.bias.zero_()
    model = Readout(ODEBlock(Rotation(omega), t1=1.0, method="dopri5", rtol=tol, atol=tol), readout)
    radius = 0.5 + torch.rand(n, generator=g)
    angle = 2 * math.pi * torch.rand(n, generator=g)
    x = torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1)
    y = (torch.cos(angle + omega) < 0).long()  # the class: which side of the y-axis the point ends on
    half = n // 2
    return model, (x[:half], y[:half]), (x[half:], y[half:])


# --- what the lesson prints -------------------------------------------------------------------


def verdict_table(reports: dict) -> str:
    """Markdown: one row per step, one column per audited model (verdict and the step's seconds),
    and the whole audit's time."""
    from nodecourse.audit.report import AuditReport

    names = list(reports)
    first: AuditReport = reports[names[0]]
    head = "| step | " + " | ".join(names) + " |"
    lines = [head, "|---|" + "---|" * len(names)]
    for s in first.steps:
        cells = [f"**{r.step(s.step).verdict}** ({r.step(s.step).seconds:.0f} s)" for r in reports.values()]
        lines.append(f"| {s.step}. {s.name} | " + " | ".join(cells) + " |")
    lines.append("| whole audit | " + " | ".join(f"{r.seconds:.0f} s" for r in reports.values()) + " |")
    return "\n".join(lines)


def ideal_steps(model: CourseModel) -> float | None:
    """Euler steps one patient needs over the 48-hour horizon at the ODE-RNN's step size (the work a
    solve with no extra steps would do), or None for a model that is not the ODE-RNN."""
    from nodecourse.audit import find_cores

    core = find_cores(model.model)[0]
    step = core.module.solver.step_size if core.kind == "ode" else None
    return None if step is None or core.label != "ODE-RNN encoder" else round(core.horizon / step)


def gaps_longer_than_a_step(model: CourseModel) -> tuple[int, int]:
    """For the ODE-RNN: how many of the time grid's consecutive gaps, scaled to the horizon in the
    data's float32 as the model scales them, are longer than the solver's step (a Python float):
    ``(longer, gaps)``. Each such gap costs a second, sliver-sized Euler step."""
    from nodecourse.audit import find_cores
    from nodecourse.models.latent import HORIZON_HOURS

    core = find_cores(model.model)[0]
    times = model.model.shared_0  # SharedInputs' first shared tensor: the grid in hours
    scaled = (times / HORIZON_HOURS).to(torch.float32)
    gaps = (scaled[1:] - scaled[:-1]).double()
    return int((gaps > core.module.solver.step_size).sum()), int(gaps.numel())
