"""Training a DEQ while logging the work of its solver: forward and backward iterations per
epoch, their status (and how many solves ran into the iteration cap), the Jacobian estimate
(optionally as a regulariser), and, at chosen epochs, the spectral radius of df/dz at the
fixed point."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

import torch
from torch import nn

from nodecourse.deq._fixed_point import fixed_point
from nodecourse.deq._layer import DEQ
from nodecourse.deq._regularizer import spectral_radius

__all__ = ["DEQLog", "fit_deq"]

# Where the "start of training" is read for growth(): the fraction of epochs averaged (0: the first epoch only).
GROWTH_BASELINES = {"first tenth": 0.1, "first 2 %": 0.02, "epoch 0": 0.0}


@dataclass
class DEQLog:
    """Per-epoch means of one training run (host floats, ready to plot), and spectral-radius checkpoints."""

    loss: list[float] = field(default_factory=list)  # task loss (without the regulariser)
    forward_iters: list[float] = field(default_factory=list)
    backward_iters: list[float] = field(default_factory=list)
    jacobian: list[float] = field(default_factory=list)  # Hutchinson ||df/dz||_F^2 (NaN when not computed)
    not_converged: list[int] = field(default_factory=list)  # forward solves per epoch without SUCCESS
    cap_hits: list[int] = field(default_factory=list)  # forward solves per epoch that used all max_iter iterations
    # One dict per checkpoint: epoch (0 = before training), rho_mean, rho_max, frac_above_1 (over the
    # probe inputs) and converged (the fraction of probe inputs whose solve reached the tolerance).
    spectral: list[dict] = field(default_factory=list)

    def growth(self, baseline: str = "first tenth") -> float:
        """End over start of training: mean forward iterations over the last tenth of the epochs
        (at least one) over those at the start, read as ``baseline`` (see :data:`GROWTH_BASELINES`):

        - ``"first tenth"``: the first tenth of the epochs, i.e. early training (the start of a
          curve of iterations against training steps, as Bai et al. 2021 plot it);
        - ``"first 2 %"``: the first 2 % of the epochs (at least one), near initialisation;
        - ``"epoch 0"``: the first epoch only (with full batches: the untrained block).
        """
        if baseline not in GROWTH_BASELINES:
            raise ValueError(f"baseline={baseline!r} is unknown; use one of {list(GROWTH_BASELINES)}")
        n = len(self.forward_iters)
        k_end = max(1, n // 10)
        k_start = max(1, int(n * GROWTH_BASELINES[baseline]))
        start = sum(self.forward_iters[:k_start]) / k_start
        end = sum(self.forward_iters[-k_end:]) / k_end
        return end / start


def find_deq(model: nn.Module) -> DEQ:
    """The (first) :class:`DEQ` inside ``model``."""
    for module in model.modules():
        if isinstance(module, DEQ):
            return module
    raise ValueError(f"{type(model).__name__} contains no DEQ layer")


def jacobian_matrices(f_out: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """The full Jacobian df/dz per sample, ``(B, D, D)`` for ``f_out``, ``z`` ``(B, D)``.

    One batched VJP per state dimension (row i of every sample's Jacobian is e_i^T J), so it is
    affordable for small states only (the course's blocks have D = 16).
    """
    if f_out.dim() != 2 or f_out.shape != z.shape:
        raise ValueError(
            f"jacobian_matrices needs f_out and z of one shape (B, D); got {tuple(f_out.shape)} and {tuple(z.shape)}"
        )
    eye = torch.eye(z.shape[1], dtype=z.dtype, device=z.device)
    rows = [torch.autograd.grad(f_out, z, eye[i].expand_as(f_out), retain_graph=True)[0] for i in range(z.shape[1])]
    return torch.stack(rows, dim=1).detach()


def equilibrium_spectral_radius(
    deq: DEQ, x: torch.Tensor, *, method: str = "exact", n_iter: int = 30, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Spectral radius of df/dz at the fixed point of each input.

    Solves z* = f(z*, x) with the layer's forward settings (no graph), then, on one application
    of f at z*: ``method="exact"`` takes the largest eigenvalue modulus of the full Jacobian
    (:func:`jacobian_matrices`; states ``(B, D)`` with small D), ``"power"`` runs
    :func:`spectral_radius` (Arnoldi) for ``n_iter`` steps (any size; exact once ``n_iter >= D``,
    an estimate below that).
    Returns ``rho`` ``(B,)`` and ``converged`` ``(B,)`` (bool: where the solve did not reach its
    tolerance, z is not a fixed point and rho describes the last iterate). The power method's
    start vectors come from a seeded generator, so the global random stream (and so training) is
    not disturbed.
    """
    if method not in ("exact", "power"):
        raise ValueError(f"method={method!r} is unknown; use 'exact' or 'power'")
    z0 = deq.initial_state(x)
    with torch.no_grad():
        res = fixed_point(
            lambda z: deq.f(z, x),
            z0,
            method=deq.method,
            tol=deq.tol,
            max_iter=deq.max_iter,
            stop_mode=deq.stop_mode,
            warn=False,
            **deq._options_for(deq.method),
        )
    z = res.z.detach().clone().requires_grad_()
    with torch.enable_grad():
        f_out = deq.f(z, x)
        if method == "exact":
            rho = torch.linalg.eigvals(jacobian_matrices(f_out, z)).abs().amax(dim=1)
        else:
            gen = torch.Generator(device=x.device).manual_seed(seed)
            rho = spectral_radius(f_out, z, n_iter=n_iter, generator=gen)
    return rho, res.converged


def fit_deq(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    lr: float = 1e-2,
    batch_size: int | None = None,
    loss: str = "mse",
    jac_weight: float = 0.0,
    jac_samples: int = 1,
    seed: int = 0,
    progress: bool = False,
    desc: str = "DEQ",
    probe_x: torch.Tensor | None = None,
    probe_epochs: Iterable[int] = (),
) -> DEQLog:
    """Train ``model`` (containing a :class:`DEQ`) with Adam on ``x`` ``(n, d)``, ``y``; log solver work.

    ``loss``: ``"mse"`` (regression, ``y`` ``(n, out)``) or ``"ce"`` (classification, ``y`` ``(n,)``).
    ``jac_weight > 0`` adds ``jac_weight * deq.jacobian_loss(jac_samples)`` (implicit DEQs only).
    With ``probe_x`` ``(P, d)``, the spectral radius of df/dz at the fixed point of each probe input
    is logged after each epoch in ``probe_epochs`` (0: before training) into ``log.spectral``; it
    does not touch the training's random stream, so a run with probes trains exactly as one without.
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
    probe_epochs = sorted(set(int(e) for e in probe_epochs))
    if probe_epochs and (probe_x is None or probe_epochs[0] < 0 or probe_epochs[-1] > epochs):
        raise ValueError(f"probe_epochs={probe_epochs} need probe_x and must lie in [0, epochs={epochs}]")
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
        status = deq.stats["forward_status"]
        return total, {
            "task": float(task.detach().cpu()),
            "jac": jac,
            "batches": 1,
            "fwd": deq.stats["forward_iters"],
            "bad": int(status != "success"),
            "cap": int(status == "max_iter"),
        }

    def on_step(logs):  # the backward solve has run now
        logs["bwd"] = deq.stats["backward_iters"] or 0

    log = DEQLog()

    def probe(epoch: int) -> None:
        if probe_x is None:  # checked above: probe_epochs are only given with probe_x
            raise ValueError(f"probe_epochs={probe_epochs} need probe_x")
        rho, conv = equilibrium_spectral_radius(deq, probe_x, seed=seed)
        log.spectral.append(
            {
                "epoch": epoch,
                "rho_mean": float(rho.mean()),
                "rho_max": float(rho.max()),
                "frac_above_1": float((rho >= 1).double().mean()),
                "converged": float(conv.double().mean()),
            }
        )

    def on_epoch(row, _model):
        b = row["batches"]
        log.loss.append(row["task"] / b)
        log.forward_iters.append(row["fwd"] / b)
        log.backward_iters.append(row["bwd"] / b)
        log.jacobian.append(row["jac"] / b)
        log.not_converged.append(int(row["bad"]))
        log.cap_hits.append(int(row["cap"]))
        if row["epoch"] in probe_epochs:
            probe(row["epoch"])

    if 0 in probe_epochs:
        model.eval()
        probe(0)
    train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(x), batch_size, seed=seed, device=x.device),
        epochs=epochs,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        on_step=on_step,
        on_epoch=on_epoch,
        progress=progress,
        desc=desc,
    )
    return log
