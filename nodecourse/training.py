"""One training loop for every model the course trains, with hooks.

The lessons train classifiers on digits, flows on the annulus and recurrent
models on PhysioNet; each needs a different loss and different things logged
(accuracy, solver work, a validation AUC), but the loop itself — seeded
shuffling, a step of the optimiser, gradient clipping, a progress bar, a row
of numbers per epoch — is this one.

A model's loss is a function of a batch of row indices::

    def loss_on_batch(idx):                  # idx: (batch,) int64 on the data's device
        out = model(x[idx])
        loss = F.cross_entropy(out, y[idx])
        return loss, {"correct": int((out.argmax(1) == y[idx]).sum())}

    history = train_epochs(model, loss_on_batch, seeded_batches(len(x), 128, seed=0, device=x.device),
                           epochs=10, optimizer=torch.optim.Adam(model.parameters(), 3e-3))

``history`` has one dict per epoch: ``epoch`` (1-based), ``loss`` (mean over
the rows seen), ``n_rows``, and the sum over the epoch of every number the
loss function logged. ``on_epoch(row, model)`` may add keys to the row (a
validation score, solver work) before it is kept and shown on the bar.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Iterator

import torch
from torch import nn

LossOnBatch = Callable[[torch.Tensor], "tuple[torch.Tensor, dict[str, float]]"]


def seeded_batches(
    n: int, batch_size: int | None, *, seed: int = 0, device: torch.device | str = "cpu"
) -> Callable[[], Iterator[torch.Tensor]]:
    """Shuffled index batches, a new permutation each epoch from one seeded generator.

    Returns a function that yields ``(batch,)`` int64 index tensors on ``device``
    covering ``range(n)`` once; ``batch_size=None`` is one full batch.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r}: give the number of training rows, a positive integer")
    size = n if batch_size is None else batch_size
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"batch_size={batch_size!r}: give a positive integer or None (full batch)")
    gen = torch.Generator().manual_seed(seed)

    def epoch() -> Iterator[torch.Tensor]:
        perm = torch.randperm(n, generator=gen).to(device)
        for i in range(0, n, size):
            yield perm[i : i + size]

    return epoch


def train_epochs(
    model: nn.Module,
    loss_on_batch: LossOnBatch,
    batches: Callable[[], Iterable[torch.Tensor]],
    *,
    epochs: int,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler | None = None,
    clip_grad_norm: float | None = None,
    on_step: Callable[[dict], None] | None = None,
    on_epoch: Callable[[dict, nn.Module], None] | None = None,
    progress: bool = False,
    desc: str | None = None,
) -> list[dict]:
    """Train for ``epochs`` epochs; return the history (one dict per epoch, see the module doc).

    ``batches()`` is called once per epoch and yields index tensors; the model is
    in train mode during the epoch and left in eval mode at the end. ``on_step(logs)``
    runs after each optimiser step and may add numbers to the batch's logs (work
    that is known only after the backward pass, such as backward solver iterations).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs={epochs!r}: give a non-negative integer")
    from tqdm.auto import tqdm

    history: list[dict] = []
    bar = tqdm(range(epochs), desc=desc or type(model).__name__, unit="epoch", disable=not progress, leave=False)
    for epoch in bar:
        model.train()
        sums: dict[str, float] = defaultdict(float)
        n_rows = 0
        for idx in batches():
            loss, logs = loss_on_batch(idx)
            optimizer.zero_grad()
            loss.backward()
            if clip_grad_norm is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
            optimizer.step()
            if on_step is not None:
                on_step(logs)
            n_rows += len(idx)
            sums["loss"] += float(loss.detach()) * len(idx)
            for key, value in logs.items():
                sums[key] += value
        if scheduler is not None:
            scheduler.step()
        row = {"epoch": epoch + 1, "loss": sums.pop("loss") / max(n_rows, 1), "n_rows": n_rows, **sums}
        if on_epoch is not None:
            model.eval()
            on_epoch(row, model)
        history.append(row)
        bar.set_postfix(loss=f"{row['loss']:.3g}")
    model.eval()
    return history


__all__ = ["seeded_batches", "train_epochs"]
