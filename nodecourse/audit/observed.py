"""Solves found by watching a forward pass: torchdiffeq's, the library's ``odeint`` called directly,
torchdeq's DEQ (:mod:`nodecourse.audit.hook`). Each source line that solves is one
:class:`ObservedCore`, with the interface of a :class:`~nodecourse.audit.discovery.Core`, so the
five steps audit it like one of the library's blocks; its settings are changed on its calls
through the hook, never on the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

import torch
from torch import nn

from nodecourse.audit import inputs as I
from nodecourse.audit.discovery import Core, module_cores, no_core_found
from nodecourse.audit.hook import FIXED_GRID, SolveCall, SolveHook

LABELS = {
    "torchdiffeq.odeint": "torchdiffeq.odeint solve",
    "torchdiffeq.odeint_adjoint": "torchdiffeq.odeint_adjoint solve",
    "nodecourse.odeint": "nodecourse.odeint solve",
    "torchdeq DEQ": "torchdeq DEQ",
}


@dataclass
class ObservedCore(Core):
    """One solve of the model, as first observed. ``call``: its first :class:`SolveCall`;
    ``calls_per_forward``: how often its line ran in one forward pass (an ODE-RNN's loop)."""

    call: SolveCall | None = None
    calls_per_forward: int = 1
    observed: bool = dc_field(default=True, init=False)

    @property
    def key(self) -> tuple:
        return self.call.key

    @property
    def field(self):
        return self.call.func

    @property
    def horizon(self) -> float | None:
        if self.kind == "deq":
            return None
        return abs(self.call.grid[-1] - self.call.grid[0])

    @property
    def can_extend_horizon(self) -> bool:
        return self.kind == "ode"

    @property
    def trajectory(self) -> bool:
        return self.call.trajectory

    @property
    def fixed_step(self) -> bool:
        return self.kind == "ode" and str(self.call.settings.get("method")) in FIXED_GRID

    @property
    def route(self) -> str:
        return self.call.route

    @property
    def dtype(self) -> torch.dtype:
        return getattr(torch, self.call.dtype)

    def settings(self) -> dict:
        c = self.call
        out = {"entry": c.entry, "site": c.site, "state": c.state if len(c.state) > 1 else c.state[0], "dtype": c.dtype}
        if c.grid is not None:
            out["grid"] = c.grid if len(c.grid) <= 6 else f"{len(c.grid)} times from {c.grid[0]:g} to {c.grid[-1]:g}"
        out.update(c.settings)
        out["gradient"] = c.route
        if self.calls_per_forward > 1:
            out["calls_per_forward"] = self.calls_per_forward
        return out

    def describe(self) -> str:
        s = self.settings()
        state = " + ".join(str(tuple(x)) for x in self.call.state)
        grid = f", grid {s['grid']}" if "grid" in s else ""
        tol = (
            f"rtol={s['rtol']:g}, atol={s['atol']:g}"
            if "rtol" in s and s.get("rtol") is not None
            else f"tol={s.get('tol', 'n/a')}"
        )
        repeat = f", {self.calls_per_forward} calls per forward pass" if self.calls_per_forward > 1 else ""
        return (
            f"{self.label} at {self.call.site}: state {state} ({s['dtype']}){grid}, {tol}, method "
            f"{s.get('method')}, gradient route {self.route}{repeat}"
        )


def observe(model: nn.Module, x, hook: SolveHook) -> list[ObservedCore]:
    """The solves one forward pass of ``model`` on the first two rows of ``x`` makes, one
    :class:`ObservedCore` per call site, in the order first called (needs ``hook`` installed)."""
    calls: list[SolveCall] = []
    with hook.listening(calls.append), torch.no_grad():
        I.call(model, I.take(x, slice(0, 2)))
    cores: dict[tuple, ObservedCore] = {}
    for c in calls:
        if c.key in cores:
            cores[c.key].calls_per_forward += 1
        else:
            kind = "deq" if c.entry == "torchdeq DEQ" else "ode"
            cores[c.key] = ObservedCore(c.site, None, kind, LABELS[c.entry], call=c)
    return list(cores.values())


def find_solves(model: nn.Module, x, hook: SolveHook) -> list[Core]:
    """Every core of ``model``: its library blocks (:func:`~nodecourse.audit.discovery.module_cores`),
    then the solves one forward pass on two rows of ``x`` makes outside them (:func:`observe`).

    Raises :class:`~nodecourse.audit.discovery.CoreNotFoundError` naming what was looked for when
    there is none.
    """
    cores = module_cores(model) + observe(model, x, hook)
    if not cores:
        raise no_core_found(model, watched=True)
    return cores


def is_observed(core) -> bool:
    return getattr(core, "observed", False)


__all__ = ["ObservedCore", "find_solves", "is_observed", "observe"]
