"""The explicit baseline: a model's core swapped for its discrete counterpart, and the one training
loop the audit uses for it (and that lesson 9 and ``nodecourse audit`` use for the models
themselves, so that model and baseline get the same data and the same budget).

Counterparts, built from a copy of the model with every weight drawn afresh:

- an :class:`~nodecourse.models.ODEBlock` on a flat state ``(B, d)`` becomes a residual stack of
  :data:`EULER_BLOCKS` untied Euler blocks ``z <- z + (t1 / n) f_k(z)``
  (:class:`~nodecourse.models.ResidualStack`), each MLP ``d -> h -> d`` with ``h`` chosen so the
  stack has as many parameters as the field it replaces;
- any other ODE core (an ODE-RNN's hidden-state ODE, a latent ODE's decoder, a block on a state
  that is not flat) keeps its field and takes **one Euler step per solve**: ``h <- h + Δt f(h)``
  across each gap, exactly the same parameters;
- a :class:`~nodecourse.DEQ` becomes the same block unrolled :data:`UNROLLED_STEPS` times from
  the DEQ's starting state (the truncation of Bai et al.'s MDEQ run: five unrolled layers).

Solves observed through the hook (:mod:`nodecourse.audit._observed`: the user's torchdiffeq, torchdeq
or direct ``nodecourse.odeint`` calls) get their counterpart on the same calls, in a copy with fresh
weights (:class:`Overridden`):

- an ODE solve becomes an **explicit stack with the same work per output interval**: ``k`` fixed
  RK4 steps between consecutive output times, ``k = max(1, round(NFE per interval / 4))`` from the
  model's own observed solve, trained by backprop (a weight-tied residual network of ``4k``
  evaluations per interval, on the model's own grid, so a trajectory stays a trajectory);
- a torchdeq DEQ becomes its block unrolled :data:`UNROLLED_STEPS` times from the DEQ's initial state.

A density model (a CNF) has no automatic counterpart (a discrete flow needs its own exact
log-determinant at matched parameters): step 1 says so and measures nothing, rather than compare
with a model that is not a density; pass ``baseline=`` your own model.
"""

from __future__ import annotations

import copy
import time
from typing import Callable

import torch
from torch import nn

from nodecourse.audit import _inputs as I
from nodecourse.audit._discovery import Core, find_cores, replace_module
from nodecourse.audit._quality import per_row_loss
from nodecourse.deq import DEQ
from nodecourse.models import CNF, ODEBlock, ResidualStack, count_parameters
from nodecourse.training import seeded_batches, train_epochs

EULER_BLOCKS = 4  # the course's residual stacks (lessons 1 and 7) have four blocks
UNROLLED_STEPS = 5  # Bai et al. 2020 truncated MDEQ to 5 unrolled layers (77.5 % -> 75.9 % on ImageNet)


def train(
    model: nn.Module,
    data,
    *,
    task: str,
    epochs: int,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
    clip_grad_norm: float | None = 5.0,
    progress: bool = False,
    desc: str | None = None,
) -> list[dict]:
    """Train ``model`` on ``data = (x, y)`` with Adam and the task's loss (cross-entropy, binary
    cross-entropy on one logit, squared error, or -log p): :func:`nodecourse.training.train_epochs`
    with seeded shuffling and gradient clipping. Returns the history (one dict per epoch).
    """
    from nodecourse.audit._quality import check_task

    check_task(task)
    x, y = I.check_pair("data", data, task=task)
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 0:
        raise ValueError(f"epochs={epochs!r}: give a non-negative integer (the training budget)")
    torch.manual_seed(seed)
    device = I.parts(x)[0].device

    def loss_on_batch(idx):
        out = I.call(model, I.take(x, idx))
        return per_row_loss(task, out, None if y is None else y[idx]).mean(), {}

    return train_epochs(
        model,
        loss_on_batch,
        seeded_batches(I.n_rows(x), batch_size, seed=seed, device=device),
        epochs=epochs,
        optimizer=torch.optim.Adam(model.parameters(), lr=lr),
        clip_grad_norm=clip_grad_norm,
        progress=progress,
        desc=desc,
    )


@torch.no_grad()
def reinitialise(model: nn.Module, seed: int = 0) -> nn.Module:
    """Draw every weight of ``model`` afresh, in place: each submodule's own ``reset_parameters``;
    a parameter no submodule resets (a bare ``nn.Parameter``) from a normal distribution with its
    current spread. Returns ``model``."""
    torch.manual_seed(seed)
    covered = set()
    for module in model.modules():
        if hasattr(module, "reset_parameters") and callable(module.reset_parameters):
            module.reset_parameters()
            covered |= {id(p) for p in module.parameters(recurse=False)}
    for p in model.parameters():
        if id(p) not in covered:
            spread = float(p.std()) if p.numel() > 1 else 0.0
            p.normal_(0.0, spread if spread > 0 else 0.1)
    return model


class UnrolledBlock(nn.Module):
    """A DEQ's block applied ``steps`` times from the DEQ's starting state: ``z <- f(z, x)``,
    backprop through every step (a weight-tied network of that depth). Called as the DEQ was:
    ``forward(x, z0=None)``."""

    def __init__(self, f: nn.Module, steps: int, initial_state: Callable[[torch.Tensor], torch.Tensor]):
        super().__init__()
        self.f = f
        self.steps = steps
        self._initial_state = initial_state

    def forward(self, x: torch.Tensor, z0: torch.Tensor | None = None) -> torch.Tensor:
        z = self._initial_state(x) if z0 is None else z0
        for _ in range(self.steps):
            z = self.f(z, x)
        return z

    def extra_repr(self) -> str:
        return f"steps={self.steps}"


def _activation_name(field: nn.Module) -> str:
    names = {nn.Tanh: "tanh", nn.ReLU: "relu", nn.Softplus: "softplus", nn.ELU: "elu"}
    for m in field.modules():
        if type(m) in names:
            return names[type(m)]
    return "tanh"


def _state_shape(model: nn.Module, core: Core, x) -> torch.Size | None:
    """The shape of the state the core is called with (one forward on two rows)."""
    seen = {}

    def hook(module, args):
        if args and isinstance(args[0], torch.Tensor):
            seen.setdefault("shape", args[0].shape)

    handle = core.module.register_forward_pre_hook(hook)
    try:
        with torch.no_grad():
            I.call(model, I.take(x, slice(0, 2)))
    finally:
        handle.remove()
    return seen.get("shape")


def matched_stack(dim: int, n_parameters: int, t1: float, activation: str) -> ResidualStack:
    """:data:`EULER_BLOCKS` untied Euler blocks on ``dim`` with about ``n_parameters`` parameters:
    a block ``dim -> h -> dim`` has ``h (2 dim + 1) + dim`` of them."""
    per_block = n_parameters / EULER_BLOCKS
    hidden = max(1, round((per_block - dim) / (2 * dim + 1)))
    return ResidualStack(dim, n_blocks=EULER_BLOCKS, hidden=(hidden,), activation=activation, step=t1 / EULER_BLOCKS)


def discrete_counterpart(model: nn.Module, x, *, seed: int = 0) -> tuple[nn.Module, str]:
    """A copy of ``model`` with fresh weights and its primary core (the first found) replaced by its
    discrete counterpart (module docstring); returns ``(baseline, description)``. Raises
    ``ValueError`` for a core that has none (a CNF)."""
    cores = find_cores(model)
    primary = cores[0]
    if isinstance(primary.module, CNF):
        raise ValueError(
            "a CNF has no automatic discrete counterpart (a discrete flow needs its own "
            "log-determinant): pass baseline= a model of your own (a RealNVP, a residual flow)"
        )
    shape = _state_shape(model, primary, x) if isinstance(primary.module, ODEBlock) else None
    baseline = reinitialise(copy.deepcopy(model), seed=seed)
    twin = find_cores(baseline)
    first = twin[0]
    if first.kind == "deq":
        if not first.path:
            raise ValueError("the model is itself a DEQ: wrap it (with its readout) so its core can be replaced")
        deq: DEQ = first.module
        replace_module(baseline, first.path, UnrolledBlock(deq.f, UNROLLED_STEPS, deq.initial_state))
        return baseline, (
            f"the DEQ's block unrolled {UNROLLED_STEPS} times from its starting state (weight-tied, "
            "backprop through every step), fresh weights"
        )
    if isinstance(first.module, ODEBlock) and shape is not None and len(shape) == 2 and first.path:
        field_params = count_parameters(first.field)
        stack = matched_stack(int(shape[-1]), field_params, first.module.t1, _activation_name(first.field))
        stack.to(device=next(first.field.parameters()).device, dtype=next(first.field.parameters()).dtype)
        replace_module(baseline, first.path, stack)
        hidden = stack.fields[0].net[0].out_features
        step = first.module.t1 / EULER_BLOCKS
        return baseline, (
            f"a residual stack of {EULER_BLOCKS} untied Euler blocks z <- z + {step:g}"
            f" f_k(z), each an MLP {shape[-1]}-{hidden}-{shape[-1]} ({count_parameters(stack):,} "
            f"parameters for the field's {field_params:,}), fresh weights"
        )
    ode = [c for c in twin if c.kind == "ode"]
    for c in ode:
        span = c.horizon or 1.0
        c.module.solver = c.module.solver.replace(method="euler", step_size=span)
    return baseline, (
        "the same model with one Euler step per solve (h <- h + Δt f(h) across each interval: "
        "a residual update with the time gap as its step), same parameters, fresh weights"
    )


class Overridden(nn.Module):
    """``model`` whose observed solves are changed by ``changes`` (``{key: {setting: value}}``, the
    hook's words) on every call: an observed model's baseline."""

    def __init__(self, model: nn.Module, changes: dict, description: str):
        super().__init__()
        self.model = model
        self.changes = changes
        self.description = description

    def forward(self, *x):
        from nodecourse.audit._hook import active

        hook = active()
        if hook is None:
            raise RuntimeError("an observed model's baseline runs inside the audit (its SolveHook)")
        with hook.overriding(self.changes):
            return self.model(*x)


def observed_counterpart(model: nn.Module, cores, *, seed: int = 0) -> tuple[nn.Module, str]:
    """The counterpart of a model whose solves were observed (module docstring): a copy with fresh
    weights whose ODE solves take fixed RK4 steps matching the model's work per output interval and
    whose torchdeq DEQs are unrolled. Returns ``(baseline, description)``."""
    baseline = reinitialise(copy.deepcopy(model), seed=seed)
    ids = _copied_ids(model, baseline)
    changes, parts = {}, []
    for c in cores:
        key = _translated(c.key, ids)  # a solve's key names its field's parameters: the copy's own
        if c.kind == "deq":
            changes[key] = {"unroll": UNROLLED_STEPS}
            parts.append(
                f"{c.label} at {c.path}: its block unrolled {UNROLLED_STEPS} times from the initial state "
                "(backprop through every application)"
            )
            continue
        intervals = max(1, len(c.call.grid) - 1)
        per_interval = (c.call.nfe or 4.0) / intervals
        k = max(1, round(per_interval / 4))
        changes[key] = {"unroll_steps": k, "route": "backprop"}
        parts.append(
            f"{c.label} at {c.path}: {k} fixed RK4 step{'s' if k > 1 else ''} per output interval "
            f"({4 * k} evaluations; the model's solve made {per_interval:.3g} per interval), backprop"
        )
    return Overridden(baseline, changes, "; ".join(parts)), (
        "the same architecture with fresh weights, " + "; ".join(parts)
    )


def _copied_ids(original: nn.Module, copy_: nn.Module) -> dict[int, int]:
    """``id`` of each parameter and module of ``original`` -> ``id`` of its twin in ``copy_`` (a deep copy)."""
    out = {id(a): id(b) for a, b in zip(original.parameters(), copy_.parameters())}
    out.update({id(a): id(b) for (_, a), (_, b) in zip(original.named_modules(), copy_.named_modules())})
    return out


def _translated(key, ids: dict[int, int]):
    """A solve's key with the original's object ids replaced by the copy's (line numbers are far below any id)."""
    if isinstance(key, tuple):
        return tuple(_translated(k, ids) for k in key)
    if isinstance(key, int) and not isinstance(key, bool):
        return ids.get(key, key)
    return key


def forward_seconds(model: nn.Module, x, *, repeats: int = 3) -> float:
    """Median wall time of ``model`` on all of ``x`` (no gradients), over ``repeats`` runs after one warm-up."""
    times = []
    with torch.no_grad():
        I.call(model, x)
        for _ in range(repeats):
            t0 = time.perf_counter()
            I.call(model, x)
            times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


__all__ = ["discrete_counterpart", "train"]
