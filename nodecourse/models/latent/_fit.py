"""Training and scoring for mortality: :func:`fit_mortality`, :class:`FitResult`, :func:`predict_proba`, :func:`auc`.

:func:`fit_mortality` trains one of :data:`MODELS` on a normalised training set (batches of ``times`` (K,),
``values`` and ``mask`` (B, K, D), ``static`` and ``static_mask`` (B, S), labels (B,)) and scores
the test AUC; :func:`make_optimizer` and :func:`kl_weight` are the settings' optimiser and KL
schedule; :func:`predict_proba` gives probabilities (N,) and :func:`auc` the ROC AUC.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from nodecourse.data.physionet import HORIZON_HOURS
from nodecourse.models._physionet_settings import PhysioNetSettings
from nodecourse.models.latent._build import ODE_MODELS, build_model
from nodecourse.models.latent._latent_ode import LatentODE
from nodecourse.solvers import SolveConfig
from nodecourse.training import seeded_batches, train_epochs

__all__ = ["FitResult", "auc", "fit_mortality", "kl_weight", "make_optimizer", "patient_batch", "predict_proba"]


@dataclass
class FitResult:
    """What one training run produced: test AUC, sizes, seconds, solver work, history."""

    model_name: str
    auc: float
    n_train: int
    n_eval: int
    seconds: float
    epochs: int
    seed: int
    solver: dict = field(default_factory=dict)  # method, step size, total NFE, NFE per forward pass
    history: list[dict] = field(default_factory=list)
    cpu_seconds: float = 0.0  # this process's CPU time: on a shared machine, wall time overstates the cost
    best_epoch: int = 0  # the epoch whose weights were kept (the last one without a validation set)

    def as_dict(self) -> dict:
        return {
            "model": self.model_name,
            "auc": self.auc,
            "n_train": self.n_train,
            "n_eval": self.n_eval,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "epochs": self.epochs,
            "best_epoch": self.best_epoch,
            "seed": self.seed,
            "solver": self.solver,
            "history": self.history,
        }


def _batches(n: int, batch_size: int, generator: torch.Generator | None):
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    for i in range(0, n, batch_size):
        yield order[i : i + batch_size]


def patient_batch(data, idx):
    """The rows ``idx`` of a :class:`~nodecourse.data.physionet.PhysioNetSet` as a model's arguments and labels.

    ``idx``: (B,) int64 patient indices. Returns ``(times, values, mask, static, static_mask, labels)``:
    ``times`` (K,) hours on the set's shared grid (every patient's), ``values`` and ``mask`` (B, K, D),
    ``static`` and ``static_mask`` (B, S), ``labels`` (B,). The first five are what a model takes,
    ``model(*patient_batch(data, idx)[:5])``; all six are what :meth:`LatentODE.loss` takes.
    """
    return (data.times, data.values[idx], data.mask[idx], data.static[idx], data.static_mask[idx], data.labels[idx])


@torch.no_grad()
def predict_proba(model: nn.Module, data, batch_size: int = 256) -> np.ndarray:
    """Mortality probabilities (N,) for a normalised set."""
    model.eval()
    out = []
    for idx in _batches(len(data), batch_size, None):
        times, values, mask, static, smask, _ = patient_batch(data, idx)
        out.append(torch.sigmoid(model(times, values, mask, static, smask)).cpu())
    return torch.cat(out).double().numpy()


def auc(labels, scores) -> float:
    """ROC AUC (scikit-learn)."""
    from sklearn.metrics import roc_auc_score

    y = labels.cpu().numpy() if isinstance(labels, torch.Tensor) else np.asarray(labels)
    return float(roc_auc_score(y, scores))


def kl_weight(settings: PhysioNetSettings | None, epoch: int) -> float:
    """The KL term's weight in ``epoch`` (0-based): 1 without a warm-up, else the published schedule
    (0 for ``kl_warmup_epochs`` epochs, then 1 - ``kl_rate`` ** (epoch - warm-up))."""
    if settings is None or settings.kl_warmup_epochs == 0:
        return 1.0
    if epoch < settings.kl_warmup_epochs:
        return 0.0
    return 1.0 - settings.kl_rate ** (epoch - settings.kl_warmup_epochs)


def make_optimizer(model: nn.Module, settings: PhysioNetSettings, epochs: int):
    """(optimizer, per-epoch scheduler or None, per-iteration scheduler or None) for ``settings``."""
    cls = torch.optim.Adamax if settings.optimizer == "adamax" else torch.optim.Adam
    opt = cls(model.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    if settings.lr_schedule == "cosine":
        return opt, torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs)), None
    rate, floor = settings.lr_decay_per_iteration, settings.lr_floor_fraction
    # published update_learning_rate: lr <- max(lr * rate, floor * lr0) after every batch
    per_step = torch.optim.lr_scheduler.LambdaLR(opt, lambda it: max(rate**it, floor))
    return opt, None, per_step


def fit_mortality(
    name: str,
    train,
    test,
    *,
    val=None,
    epochs: int | None = None,
    batch_size: int | None = None,
    lr: float = 3e-3,
    weight_decay: float = 1e-3,
    hidden_dim: int = 64,
    solver: SolveConfig | None = None,
    seed: int = 0,
    progress: bool = True,
    eval_every: int = 0,
    settings: PhysioNetSettings | None = None,
) -> tuple[object, FitResult]:
    """Train ``name`` on the normalised ``train`` set and score AUC on ``test``.

    With a validation set ``val`` (patients of the training split, never of ``test``), the
    weights of the epoch with the best validation AUC are kept; without one, those of the last
    epoch. The test set never chooses anything. ``eval_every > 0`` also records the test AUC
    every that many epochs in the history, for plots only.

    ``settings`` (e.g. :data:`~nodecourse.models._physionet_settings.PHYSIONET_PUBLISHED`) sets the sizes,
    solvers, optimiser, learning-rate schedule, clipping, the Latent ODE's loss weights and KL
    schedule; ``lr``, ``weight_decay`` and ``hidden_dim`` are then ignored, and ``epochs`` and
    ``batch_size`` default to the settings'. Without settings: Adam with cosine decay, 10
    epochs, batches of 64 (the course's behaviour before the settings existed).
    """
    if settings is None:
        epochs = 10 if epochs is None else epochs
        batch_size = 64 if batch_size is None else batch_size
    else:
        epochs = settings.epochs if epochs is None else epochs
        batch_size = settings.batch_size if batch_size is None else batch_size
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs={epochs!r}: give a non-negative integer")
    for split_name, split in (("train", train), ("test", test), ("val", val)):
        if split is not None and not getattr(split, "normalized", False):
            raise ValueError(f"{split_name} is not normalised; apply Normalizer.fit(train).transform(...) first")
    start, cpu_start = time.perf_counter(), time.process_time()
    model = build_model(name, train, hidden_dim=hidden_dim, solver=solver, seed=seed, settings=settings)
    if name == "summary-logreg":
        model.fit(train)
        score = auc(test.labels, model.predict_proba(test))
        return model, FitResult(
            name,
            score,
            len(train),
            len(test),
            time.perf_counter() - start,
            0,
            seed,
            cpu_seconds=time.process_time() - cpu_start,
        )

    if settings is None:
        opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        per_epoch, per_step, clip = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max(1, epochs)), None, 5.0
    else:
        (opt, per_epoch, per_step), clip = make_optimizer(model, settings, epochs), settings.clip_grad_norm
    n_batches = math.ceil(len(train) / batch_size)
    n_forward = 0
    best = {"auc": -1.0, "state": None, "epoch": epochs}

    def loss_on_batch(idx):
        nonlocal n_forward
        times, values, mask, static, smask, y = patient_batch(train, idx)
        n_forward += 1
        if isinstance(model, LatentODE):
            model.kl_coef = kl_weight(settings, (n_forward - 1) // n_batches)
            return model.loss(times, values, mask, static, smask, y)[0], {}
        logits = model(times, values, mask, static, smask)
        return nn.functional.binary_cross_entropy_with_logits(logits, y), {}

    def on_epoch(row, model):
        # The validation split (patients of the training set) picks the epoch; the test set never does.
        row["train_loss"] = row["loss"]
        row["nfe"] = model.solver_stats["nfe"]
        if val is not None:
            row["val_auc"] = auc(val.labels, predict_proba(model, val))
            if row["val_auc"] > best["auc"]:
                best.update(
                    auc=row["val_auc"],
                    epoch=row["epoch"],
                    state={k: v.detach().clone() for k, v in model.state_dict().items()},
                )
        if eval_every and row["epoch"] % eval_every == 0:
            row["test_auc"] = auc(test.labels, predict_proba(model, test))

    history = train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(train), batch_size, seed=seed, device=train.values.device),
        epochs=epochs,
        optimizer=opt,
        scheduler=per_epoch,
        clip_grad_norm=clip,
        on_epoch=on_epoch,
        on_step=(lambda logs: per_step.step()) if per_step is not None else None,
        progress=progress,
        desc=f"{name} seed {seed}",
    )
    best_state, best_epoch = best["state"], best["epoch"]
    if best_state is not None:
        model.load_state_dict(best_state)
    train_nfe = model.solver_stats["nfe"]
    score = auc(test.labels, predict_proba(model, test))
    seconds = time.perf_counter() - start
    solver_info = {}
    if name in ODE_MODELS:
        cfg = model.encoder.solver
        solver_info = {
            "method": cfg.method,
            "step_size_hours": None if cfg.step_size is None else cfg.step_size * HORIZON_HOURS,
            "train_nfe": train_nfe,
            "nfe_per_training_batch": train_nfe / max(n_forward, 1),
        }
        if isinstance(model, LatentODE):  # its decoder solves apart from the encoder
            solver_info["decoder_method"] = model.solver.method
    result = FitResult(
        name,
        score,
        len(train),
        len(test),
        seconds,
        epochs,
        seed,
        solver_info,
        history,
        cpu_seconds=time.process_time() - cpu_start,
    )
    result.best_epoch = best_epoch if val is not None else epochs
    return model, result
