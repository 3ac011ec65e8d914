"""Augmented flows, readouts, and the three annulus models of lesson 3.

A flow of ``dz/dt = f(z)`` on R^d is a homeomorphism: trajectories cannot
cross, so some maps (g(-1) = 1, g(1) = -1; the annulus) are out of reach on
R^d. Two repairs are built here:

- **augmentation** (Dupont et al. 2019): pad the state with ``augment_dim``
  zeros and flow in R^(d+p) (:class:`AugmentedODE`);
- **a linear readout** after the flow (Zhang et al. 2020): a linear map need
  not be invertible (:func:`make_readout`).

The models the lesson trains (:func:`plain_node`, :func:`augmented_node`,
:func:`matched_resnet`) all map ``(batch, d) -> (batch, out_dim)``, run on any
device and dtype (move them with ``.to``), and keep the solver's work visible:
``model.last_nfe`` is the forward NFE of the latest call, and :func:`fit_augmented`
records NFE per epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
from torch import nn

from nodecourse.models._blocks import MLPField, ODEBlock, count_parameters
from nodecourse.solvers import SolveConfig
from nodecourse.training import seeded_batches, train_epochs

FLOW_READOUTS = ("projection", "linear")
AUGMENTED_LOSSES = ("mse", "smooth_l1")


def pad_zeros(x: torch.Tensor, augment_dim: int) -> torch.Tensor:
    """Append ``augment_dim`` zero coordinates: ``(batch, d) -> (batch, d + augment_dim)``."""
    if augment_dim == 0:
        return x
    return torch.cat([x, x.new_zeros(*x.shape[:-1], augment_dim)], dim=-1)


def _check_nonneg_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}={value!r}: give a non-negative integer")
    return value


class AugmentedODE(nn.Module):
    """Pad the input with ``augment_dim`` zeros, then flow: ``x -> z(t1)`` with ``z(0) = [x, 0]``.

    ``field`` is the vector field on R^(d + augment_dim) (for example
    ``MLPField(d + augment_dim)``); the solve is an :class:`~nodecourse.models.ODEBlock`
    with the solver settings given here (a :class:`~nodecourse.SolveConfig` as
    ``solver``, or its fields as keywords). ``augment_dim=0`` is the plain neural ODE.

    Input ``(batch, d)``; output ``(batch, d + augment_dim)``. After each call,
    ``last_stats`` is the solver's stats dict (``nfe``, ``n_steps``, ...).
    """

    def __init__(
        self,
        field: nn.Module,
        augment_dim: int = 0,
        *,
        t1: float = 1.0,
        solver: SolveConfig | None = None,
        **options,
    ):
        super().__init__()
        self.augment_dim = _check_nonneg_int("augment_dim", augment_dim)
        field_dim = getattr(field, "dim", None)
        if field_dim is not None and field_dim <= augment_dim:
            raise ValueError(
                f"augment_dim={augment_dim} leaves no input coordinates in a field of dim {field_dim}; "
                "build the field on d + augment_dim coordinates"
            )
        self.block = ODEBlock(field, t1=t1, solver=solver, **options)

    @property
    def field(self) -> nn.Module:
        return self.block.field

    @property
    def last_stats(self) -> dict:
        return self.block.last_stats

    def augment(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, d) -> (batch, d + augment_dim)``: the initial state ``[x, 0]``."""
        field_dim = getattr(self.field, "dim", None)
        if field_dim is not None and x.shape[-1] + self.augment_dim != field_dim:
            raise ValueError(
                f"input of shape {tuple(x.shape)} has {x.shape[-1]} features, but the field acts on "
                f"{field_dim} = d + augment_dim with augment_dim={self.augment_dim}; "
                f"give inputs with {field_dim - self.augment_dim} features"
            )
        return pad_zeros(x, self.augment_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(self.augment(x))

    def trajectory(self, x: torch.Tensor, n_times: int = 21) -> tuple[torch.Tensor, torch.Tensor]:
        """States on an even time grid: returns ``(ts, zs)``, ``ts`` ``(n_times,)``,
        ``zs`` ``(n_times, batch, d + augment_dim)``. Uses the block's solver settings, all of them.
        """
        if isinstance(n_times, bool) or not isinstance(n_times, int) or n_times < 2:
            raise ValueError(f"n_times={n_times!r}: give an integer >= 2 (the grid includes 0 and t1)")
        ts = torch.linspace(0.0, self.block.t1, n_times, dtype=x.dtype, device=x.device)
        return ts, self.block.solve(self.augment(x), ts).ys


class ProjectionReadout(nn.Module):
    """A fixed readout with no parameters: the first ``out_dim`` coordinates of the state.

    ``(batch, D) -> (batch, out_dim)``. With it the flow alone must produce the answer.
    """

    def __init__(self, out_dim: int = 1):
        super().__init__()
        self.out_dim = out_dim

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return z[..., : self.out_dim]


def make_readout(kind: str, in_dim: int, out_dim: int = 1) -> nn.Module:
    """``"projection"`` (:class:`ProjectionReadout`, fixed) or ``"linear"`` (a learned ``nn.Linear``)."""
    if kind == "projection":
        if out_dim > in_dim:
            raise ValueError(f"out_dim={out_dim} > state dim {in_dim}: a projection cannot add coordinates")
        return ProjectionReadout(out_dim)
    if kind == "linear":
        return nn.Linear(in_dim, out_dim)
    raise ValueError(f"readout={kind!r} is unknown; use one of {FLOW_READOUTS}")


class FlowModel(nn.Module):
    """``x -> readout(flow(x))``: an (augmented) neural ODE followed by a readout.

    Input ``(batch, d)``; output ``(batch, out_dim)``. ``last_nfe`` is the forward
    NFE of the latest call (the backward pass is not counted).
    """

    def __init__(self, flow: AugmentedODE, readout: nn.Module):
        super().__init__()
        self.flow = flow
        self.readout = readout

    @property
    def last_nfe(self) -> int:
        return int(self.flow.last_stats.get("nfe", 0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.flow(x))


def _flow_model(
    dim: int, augment_dim: int, readout: str, out_dim: int, hidden: Sequence[int], activation: str, solver: dict
) -> FlowModel:
    _check_nonneg_int("dim", dim)
    if dim < 1:
        raise ValueError(f"dim={dim!r}: give the input dimension (>= 1)")
    field_dim = dim + augment_dim
    flow = AugmentedODE(MLPField(field_dim, hidden=tuple(hidden), activation=activation), augment_dim, **solver)
    return FlowModel(flow, make_readout(readout, field_dim, out_dim))


def plain_node(
    dim: int,
    *,
    readout: str = "linear",
    out_dim: int = 1,
    hidden: Sequence[int] = (32, 32),
    activation: str = "relu",
    **solver,
) -> FlowModel:
    """A neural ODE on R^dim with a readout. ``solver``: ``t1, method, rtol, atol, step_size, gradient``."""
    return _flow_model(dim, 0, readout, out_dim, hidden, activation, solver)


def augmented_node(
    dim: int,
    augment_dim: int = 1,
    *,
    readout: str = "linear",
    out_dim: int = 1,
    hidden: Sequence[int] = (32, 32),
    activation: str = "relu",
    **solver,
) -> FlowModel:
    """A neural ODE on R^(dim + augment_dim), input padded with zeros, with a readout."""
    if _check_nonneg_int("augment_dim", augment_dim) < 1:
        raise ValueError(f"augment_dim={augment_dim!r}: an augmented model needs >= 1 (0 is plain_node)")
    return _flow_model(dim, augment_dim, readout, out_dim, hidden, activation, solver)


class ResNetModel(nn.Module):
    """``n_blocks`` residual blocks ``z <- z + f_k(z)`` on R^dim (own weights each), then a linear readout.

    Discrete steps can jump, so the map need not be a homeomorphism.
    Input ``(batch, dim)``; output ``(batch, out_dim)``. ``last_nfe`` is
    ``n_blocks`` (one field evaluation per block) for comparison with the flows.
    """

    def __init__(self, dim: int, n_blocks: int, hidden: Sequence[int], activation: str = "relu", out_dim: int = 1):
        super().__init__()
        if isinstance(n_blocks, bool) or not isinstance(n_blocks, int) or n_blocks < 1:
            raise ValueError(f"n_blocks={n_blocks!r}: give a positive integer")
        self.blocks = nn.ModuleList(MLPField(dim, hidden=tuple(hidden), activation=activation) for _ in range(n_blocks))
        self.readout = nn.Linear(dim, out_dim)

    @property
    def last_nfe(self) -> int:
        return len(self.blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x
        for f in self.blocks:
            z = z + f(None, z)
        return self.readout(z)


def matched_resnet(
    dim: int,
    target_parameters: int,
    *,
    n_blocks: int = 2,
    n_layers: int = 2,
    activation: str = "relu",
    out_dim: int = 1,
) -> ResNetModel:
    """A :class:`ResNetModel` with ``n_blocks`` blocks of ``n_layers`` equal hidden layers whose
    width is chosen so the parameter count is as close as possible to ``target_parameters``.
    """
    if target_parameters < 1:
        raise ValueError(f"target_parameters={target_parameters!r}: give a positive count")

    def size(width: int) -> int:
        return count_parameters(ResNetModel(dim, n_blocks, [width] * n_layers, activation, out_dim))

    # The count grows monotonically with the width: scan until it passes the target.
    best = 1
    for width in range(1, 4096):
        if abs(size(width) - target_parameters) <= abs(size(best) - target_parameters):
            best = width
        if size(width) > target_parameters:
            break
    return ResNetModel(dim, n_blocks, [best] * n_layers, activation, out_dim)


# --- training ------------------------------------------------------------------------------


@dataclass
class FitLog:
    """What :func:`fit_augmented` saw, one entry per epoch.

    ``loss``: mean training loss; ``accuracy``: sign accuracy on the training set
    (classification only, else NaN), measured in the same forward passes;
    ``nfe``: forward NFE summed over the epoch; ``nfe_per_forward``: its mean per call.
    """

    loss: list[float] = field(default_factory=list)
    accuracy: list[float] = field(default_factory=list)
    nfe: list[int] = field(default_factory=list)
    nfe_per_forward: list[float] = field(default_factory=list)

    def epochs_to(self, accuracy: float) -> int | None:
        """First epoch (1-based) whose accuracy is at least ``accuracy``; ``None`` if never."""
        for i, a in enumerate(self.accuracy):
            if a >= accuracy:
                return i + 1
        return None


def fit_augmented(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int,
    lr: float = 1e-3,
    batch_size: int | None = None,
    loss: str = "smooth_l1",
    classification: bool = True,
    seed: int = 0,
    progress: bool = False,
    desc: str | None = None,
) -> FitLog:
    """Train ``model`` on ``(x, y)`` with Adam; returns a :class:`FitLog`.

    ``x``: ``(n, d)``; ``y``: ``(n, out_dim)`` (labels in {-1, +1} when
    ``classification``). The model is moved to ``x``'s device and dtype.
    ``batch_size=None`` is full-batch (one step per epoch). Shuffling is seeded.
    Loss: ``"smooth_l1"`` (Dupont et al.) or ``"mse"``.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs={epochs!r}: give a positive integer")
    if loss not in AUGMENTED_LOSSES:
        raise ValueError(f"loss={loss!r} is unknown; use one of {AUGMENTED_LOSSES}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x has {x.shape[0]} rows but y has {y.shape[0]}; give one target per input")
    n = x.shape[0]
    loss_fn = nn.functional.smooth_l1_loss if loss == "smooth_l1" else nn.functional.mse_loss
    model.to(device=x.device, dtype=x.dtype)

    def loss_on_batch(idx):
        out = model(x[idx])
        logs = {"nfe": int(getattr(model, "last_nfe", 0)), "calls": 1}
        if classification:
            logs["correct"] = int((torch.sign(out.detach()) == y[idx]).all(dim=-1).sum())
        return loss_fn(out, y[idx]), logs

    history = train_epochs(
        model,
        loss_on_batch,
        seeded_batches(n, batch_size, seed=seed, device=x.device),
        epochs=epochs,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        progress=progress,
        desc=desc,
    )
    log = FitLog()
    for row in history:
        log.loss.append(row["loss"])
        log.accuracy.append(row["correct"] / n if classification else math.nan)
        log.nfe.append(int(row["nfe"]))
        log.nfe_per_forward.append(row["nfe"] / row["calls"])
    return log


@torch.no_grad()
def sign_accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of rows where ``sign(model(x)) == y`` (labels in {-1, +1})."""
    return (torch.sign(model(x)) == y).all(dim=-1).double().mean().item()


__all__ = [
    "AugmentedODE",
    "FitLog",
    "FlowModel",
    "AUGMENTED_LOSSES",
    "ProjectionReadout",
    "FLOW_READOUTS",
    "ResNetModel",
    "augmented_node",
    "fit_augmented",
    "make_readout",
    "matched_resnet",
    "pad_zeros",
    "plain_node",
    "sign_accuracy",
]
