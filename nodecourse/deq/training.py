"""Training a DEQ while logging the work of its solver: forward and backward iterations per
epoch, their status, and the Jacobian estimate (optionally as a regulariser)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from nodecourse.deq.layer import DEQ


@dataclass
class DEQLog:
    """Per-epoch means of one training run (host floats, ready to plot)."""

    loss: list[float] = field(default_factory=list)  # task loss (without the regulariser)
    forward_iters: list[float] = field(default_factory=list)
    backward_iters: list[float] = field(default_factory=list)
    jacobian: list[float] = field(default_factory=list)  # Hutchinson ||df/dz||_F^2 (NaN when not computed)
    not_converged: list[int] = field(default_factory=list)  # forward solves per epoch without SUCCESS

    def growth(self) -> float:
        """End over start of training: mean forward iterations over the last tenth of the epochs
        (at least one) over those of the first 2 % (at least one), i.e. at (near) initialisation.

        The start is taken before training has changed f much; a wider window (say the first
        tenth) would mix in the transient spike of iterations that early, large updates often cause.
        """
        n = len(self.forward_iters)
        k_end, k_start = max(1, n // 10), max(1, n // 50)
        start = sum(self.forward_iters[:k_start]) / k_start
        end = sum(self.forward_iters[-k_end:]) / k_end
        return end / start


def find_deq(model: nn.Module) -> DEQ:
    """The (first) :class:`DEQ` inside ``model``."""
    for module in model.modules():
        if isinstance(module, DEQ):
            return module
    raise ValueError(f"{type(model).__name__} contains no DEQ layer")


def fit_deq(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, epochs: int, lr: float = 1e-2,
            batch_size: int | None = None, loss: str = "mse", jac_weight: float = 0.0, jac_samples: int = 1,
            seed: int = 0, progress: bool = False, desc: str = "DEQ") -> DEQLog:
    """Train ``model`` (containing a :class:`DEQ`) with Adam on ``x`` ``(n, d)``, ``y``; log solver work.

    ``loss``: ``"mse"`` (regression, ``y`` ``(n, out)``) or ``"ce"`` (classification, ``y`` ``(n,)``).
    ``jac_weight > 0`` adds ``jac_weight * deq.jacobian_loss(jac_samples)`` (implicit DEQs only).
    """
    from nodecourse.training import seeded_batches, train_epochs

    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs={epochs!r} must be a positive int")
    if loss not in ("mse", "ce"):
        raise ValueError(f"loss={loss!r} is unknown; use 'mse' or 'ce'")
    if jac_weight < 0:
        raise ValueError(f"jac_weight={jac_weight!r} must be >= 0")
    deq = find_deq(model)
    if jac_weight > 0 and deq.backward != "implicit":
        raise ValueError(f"jac_weight={jac_weight} needs backward='implicit'; this DEQ has backward={deq.backward!r}")
    criterion = nn.MSELoss() if loss == "mse" else nn.CrossEntropyLoss()
    jac_logged = deq.backward == "implicit"

    def loss_on_batch(idx):
        task = criterion(model(x[idx]), y[idx])
        total, jac = task, float("nan")
        if jac_logged:
            with torch.set_grad_enabled(jac_weight > 0):
                j = deq.jacobian_loss(jac_samples)
            jac = float(j.detach().cpu())
            if jac_weight > 0:
                total = task + jac_weight * j
        # deq.stats describe this batch's forward solve (the backward one is added after backward).
        return total, {"task": float(task.detach().cpu()), "jac": jac, "batches": 1,
                       "fwd": deq.stats["forward_iters"], "bad": int(deq.stats["forward_status"] != "success")}

    def on_step(logs):  # the backward solve has run now
        logs["bwd"] = deq.stats["backward_iters"] or 0

    log = DEQLog()

    def on_epoch(row, _model):
        b = row["batches"]
        log.loss.append(row["task"] / b)
        log.forward_iters.append(row["fwd"] / b)
        log.backward_iters.append(row["bwd"] / b)
        log.jacobian.append(row["jac"] / b)
        log.not_converged.append(int(row["bad"]))

    train_epochs(model, loss_on_batch, seeded_batches(len(x), batch_size, seed=seed, device=x.device),
                 epochs=epochs, optimizer=torch.optim.Adam(model.parameters(), lr=lr),
                 on_step=on_step, on_epoch=on_epoch, progress=progress, desc=desc)
    return log
