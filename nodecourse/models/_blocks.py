"""Vector fields, ODE blocks and their discrete counterparts.

The pieces every lesson trains:

- :class:`MLPField`: a small MLP vector field ``f(t, z)`` of shape ``(..., dim) -> (..., dim)``;
- :class:`ODEBlock`: maps ``z(0)`` to ``z(t1)`` by solving ``dz/dt = f(t, z)`` with
  :func:`nodecourse.odeint`, and keeps the solver's work (NFE, steps) visible;
- :class:`ResidualStack`: the discrete competitor, ``z <- z + f(z)`` repeated.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from nodecourse.solvers import SolveConfig, odeint
from nodecourse.validation import Arg, Flag, Interval, WrongTypeError, check, check_args

__all__ = [
    "MLPField",
    "ODEBlock",
    "ODENetClassifier",
    "ResidualStack",
    "ResNetClassifier",
    "accuracy",
    "accuracy_vs_steps",
    "count_parameters",
    "matched_field_width",
    "mlp",
    "train_classifier",
]

_ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "softplus": nn.Softplus, "elu": nn.ELU}


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters of ``module``."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)


def _activation(name: str) -> nn.Module:
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation={name!r} is unknown; use one of {sorted(_ACTIVATIONS)}")
    return _ACTIVATIONS[name]()


def mlp(sizes: Sequence[int], activation: str = "tanh") -> nn.Sequential:
    """An MLP with ``activation`` between layers and a linear last layer."""
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(n_in, n_out))
        if i < len(sizes) - 2:
            layers.append(_activation(activation))
    return nn.Sequential(*layers)


#: The declared arguments of :class:`MLPField` and :class:`ODEBlock` (``hidden`` is checked by hand: a sequence).
MLP_FIELD_ARGS = {
    "dim": Arg(Interval(int, 1, None), fix="e.g. MLPField(2) for a 2-D state"),
    "time_dependent": Arg(Flag()),
}
ODE_BLOCK_T1 = Arg(Interval(float, 0, None, "neither", unit="(the integration time)"), fix="e.g. t1=1.0")


class MLPField(nn.Module):
    """A vector field ``f(t, z)``: an MLP ``dim -> hidden... -> dim``.

    With ``time_dependent=True`` the time ``t`` is concatenated to the input
    (so the field is non-autonomous). Input ``z`` of shape ``(..., dim)``;
    output of the same shape.
    """

    def __init__(
        self,
        dim: int,
        hidden: Sequence[int] = (32, 32),
        activation: str = "tanh",
        time_dependent: bool = False,
    ):
        super().__init__()
        check_args({"dim": dim, "time_dependent": time_dependent}, MLP_FIELD_ARGS)
        if not isinstance(hidden, Sequence) or not all(
            isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in hidden
        ):
            raise WrongTypeError(
                f"hidden={hidden!r} must be a sequence of positive ints (the hidden widths), e.g. hidden=(32, 32)"
            )
        self.dim = dim
        self.time_dependent = bool(time_dependent)
        self.net = mlp([dim + int(self.time_dependent), *hidden, dim], activation)

    def forward(self, t: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if self.time_dependent:
            tt = torch.as_tensor(t, dtype=z.dtype, device=z.device)
            # per-sample solves pass t of shape (batch,): one time per row
            tt = (tt[:, None] if tt.dim() == 1 else tt).expand(*z.shape[:-1], 1)
            z = torch.cat([z, tt], dim=-1)
        return self.net(z)


class ODEBlock(nn.Module):
    """``z(0) -> z(t1)`` through ``dz/dt = field(t, z)``, solved by :func:`nodecourse.odeint`.

    The solver settings are one :class:`~nodecourse.SolveConfig`, ``solver``
    (``ODEBlock(field, solver=SolveConfig(method="rk4", step_size=0.1))``, or
    the same settings as keywords: ``ODEBlock(field, method="rk4", step_size=0.1)``).
    After each forward, ``last_stats`` holds the solver's stats dict (``nfe``,
    ``n_steps``, ``n_accepted``, ``n_rejected``) and ``nfe_forward`` accumulates
    forward NFE until :meth:`reset_counters`. Input ``(batch, dim)``; output the same shape.
    """

    def __init__(self, field: nn.Module, t1: float = 1.0, *, solver: SolveConfig | None = None, **options):
        super().__init__()
        self.field = field
        self.t1 = float(check("t1", t1, ODE_BLOCK_T1))
        self.solver = SolveConfig.of(solver, **options)
        self.last_stats: dict = {}
        self.nfe_forward = 0
        self.n_forward = 0

    def reset_counters(self) -> None:
        self.nfe_forward = 0
        self.n_forward = 0

    def solve(self, z0: torch.Tensor, t: torch.Tensor | None = None, **overrides):
        """The full :class:`~nodecourse.Solution` (trajectory at ``t``; default ``[0, t1]``).

        ``overrides`` replace the block's solver settings for this call only
        (e.g. ``method="euler", step_size=0.25`` to evaluate with other steps).
        """
        if t is None:
            t = torch.tensor([0.0, self.t1], dtype=z0.dtype, device=z0.device)
        sol = odeint(self.field, z0, t, **self.solver.replace(**overrides).odeint_kwargs())
        self.last_stats = sol.stats  # the solution's own dict: it stays true after backward (nfe_backward)
        self.nfe_forward += int(sol.stats["nfe"])
        self.n_forward += 1
        return sol

    def forward(self, z0: torch.Tensor) -> torch.Tensor:
        return self.solve(z0).ys[-1]


class ResidualStack(nn.Module):
    """``n_blocks`` residual updates ``z <- z + h * f_k(z)``: the discrete counterpart of :class:`ODEBlock`.

    With ``shared=True`` one field is reused at every block (an unrolled,
    weight-tied network; with ``h = t1 / n_blocks`` it is exactly Euler's
    method on that field). Input ``(batch, dim)``; output the same shape.
    """

    def __init__(
        self,
        dim: int,
        n_blocks: int = 4,
        hidden: Sequence[int] = (32, 32),
        activation: str = "tanh",
        shared: bool = False,
        step: float = 1.0,
    ):
        super().__init__()
        if not isinstance(n_blocks, int) or n_blocks < 1:
            raise ValueError(f"n_blocks={n_blocks!r} must be a positive int")
        n_fields = 1 if shared else n_blocks
        self.fields = nn.ModuleList(MLPField(dim, hidden, activation) for _ in range(n_fields))
        self.n_blocks = n_blocks
        self.shared = shared
        self.step = float(step)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        for k in range(self.n_blocks):
            field = self.fields[0 if self.shared else k]
            z = z + self.step * field(None, z)
        return z


# --- Lesson 1: digit classifiers, a residual stack and an ODE-Net at matched size -------------


def matched_field_width(dim: int, n_blocks: int, hidden: int) -> int:
    """Hidden width of one ``dim -> H -> dim`` field with about as many parameters as
    ``n_blocks`` fields ``dim -> hidden -> dim`` (one field per residual block).

    A block ``dim -> h -> dim`` has ``2*dim*h + h + dim`` parameters, so
    ``H = round((n_blocks * (2*dim*hidden + hidden + dim) - dim) / (2*dim + 1))``.
    """
    for name, value in (("dim", dim), ("n_blocks", n_blocks), ("hidden", hidden)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r} must be a positive int")
    target = n_blocks * (2 * dim * hidden + hidden + dim)
    return max(1, round((target - dim) / (2 * dim + 1)))


class ResNetClassifier(nn.Module):
    """Embed, ``n_blocks`` residual blocks ``z <- z + f_k(z)`` (each its own weights), read out.

    ``(batch, n_in) -> Linear -> (batch, width) -> ResidualStack -> Linear -> (batch, n_classes)`` logits.
    """

    def __init__(
        self,
        n_in: int = 64,
        n_classes: int = 10,
        width: int = 32,
        n_blocks: int = 4,
        hidden: int = 64,
        activation: str = "tanh",
    ):
        super().__init__()
        self.embed = nn.Linear(n_in, width)
        self.blocks = ResidualStack(width, n_blocks=n_blocks, hidden=(hidden,), activation=activation)
        self.readout = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.readout(self.blocks(self.embed(x)))


class ODENetClassifier(nn.Module):
    """Embed, one ODE block ``dz/dt = f(z)`` on ``[0, t1]``, read out: the continuous counterpart
    of :class:`ResNetClassifier`.

    Trained with a fixed-step solver (``method``, ``n_steps`` steps of size
    ``t1 / n_steps``); :meth:`forward` takes ``n_steps`` / ``method`` to evaluate
    the same trained weights with another discretisation.
    ``(batch, n_in) -> (batch, n_classes)`` logits.
    """

    def __init__(
        self,
        n_in: int = 64,
        n_classes: int = 10,
        width: int = 32,
        hidden: int = 256,
        n_steps: int = 4,
        method: str = "euler",
        t1: float = 1.0,
        activation: str = "tanh",
    ):
        super().__init__()
        if not isinstance(n_steps, int) or n_steps < 1:
            raise ValueError(f"n_steps={n_steps!r} must be a positive int (fixed steps on [0, t1])")
        self.embed = nn.Linear(n_in, width)
        self.ode = ODEBlock(MLPField(width, (hidden,), activation), t1=t1, method=method, step_size=t1 / n_steps)
        self.n_steps = n_steps
        self.readout = nn.Linear(width, n_classes)

    def forward(self, x: torch.Tensor, *, n_steps: int | None = None, method: str | None = None) -> torch.Tensor:
        z = self.embed(x)
        if n_steps is None and method is None:
            z = self.ode(z)
        else:
            n = self.n_steps if n_steps is None else n_steps
            if not isinstance(n, int) or n < 1:
                raise ValueError(f"n_steps={n_steps!r} must be a positive int")
            z = self.ode.solve(z, method=method or self.ode.solver.method, step_size=self.ode.t1 / n).ys[-1]
        return self.readout(z)


@torch.no_grad()
def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of rows of ``logits`` ``(n, classes)`` whose argmax equals ``labels`` ``(n,)``."""
    return (logits.argmax(dim=-1) == labels).double().mean().item()


@torch.no_grad()
def accuracy_vs_steps(
    model: ODENetClassifier,
    x: torch.Tensor,
    y: torch.Tensor,
    steps: Sequence[int] = (1, 2, 4, 8, 16),
    method: str | None = None,
) -> dict[int, dict]:
    """Evaluate a trained :class:`ODENetClassifier` with other step counts than it was trained with.

    Returns ``{n_steps: {"accuracy": float, "nfe": int}}``; ``nfe`` is the
    solver's count for that evaluation (the compute spent).
    """
    if not isinstance(model, ODENetClassifier):
        raise TypeError(f"model is a {type(model).__name__}; accuracy_vs_steps needs an ODENetClassifier")
    was_training = model.training
    model.eval()
    out = {}
    for n in steps:
        logits = model(x, n_steps=int(n), method=method)
        out[int(n)] = {"accuracy": accuracy(logits, y), "nfe": int(model.ode.last_stats["nfe"])}
    model.train(was_training)
    return out


def train_classifier(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int = 20,
    batch_size: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = True,
) -> list[float]:
    """Train ``model`` (logits) on ``x`` ``(n, features)``, ``y`` ``(n,)`` with Adam and cross-entropy.

    Returns the mean training loss of each epoch. Shuffling is seeded.
    """
    from nodecourse.training import seeded_batches, train_epochs

    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs={epochs!r} must be a positive int")

    def loss_on_batch(idx):
        return nn.functional.cross_entropy(model(x[idx]), y[idx]), {}

    history = train_epochs(
        model,
        loss_on_batch,
        seeded_batches(len(y), batch_size, seed=seed, device=y.device),
        epochs=epochs,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        progress=progress,
    )
    return [row["loss"] for row in history]
