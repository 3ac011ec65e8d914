"""Solves found by watching a forward pass: torchdiffeq's, the library's ``odeint`` called directly,
torchdeq's DEQ (:mod:`nodecourse.audit._hook`). Each solve (a call's identity: its site, the
function solved and the settings it was called with, not its source line alone) is one
:class:`ObservedCore`, with the interface of a :class:`~nodecourse.audit._discovery.Core`, so the
five steps audit it like one of the library's blocks; its settings are changed on its calls
through the hook, never on the model.

The forward pass is watched twice: in eval mode without gradients (what the model is deployed
with) and in the mode it trains in (:func:`training_route`: train mode, gradients on, the model's
state restored after). Where the two differ (another solver, tolerance, gradient route or number
of solves, as a model that picks its solver on ``self.training``), the report says so and step 5
judges the training route's gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

import torch
from torch import nn

from nodecourse.audit import _inputs as I
from nodecourse.audit._control import cde_library
from nodecourse.audit._discovery import Core, CoreNotFoundError, module_cores, no_core_found
from nodecourse.audit._hook import FIXED_GRID, TORCHCDE_SDE_BACKEND, EventSolveError, SolveCall, SolveHook
from nodecourse.audit._state import kept_as_found

LABELS = {
    "torchdiffeq.odeint": "torchdiffeq.odeint solve",
    "torchdiffeq.odeint_adjoint": "torchdiffeq.odeint_adjoint solve",
    "nodecourse.odeint": "nodecourse.odeint solve",
    "torchdeq DEQ": "torchdeq DEQ",
}


@dataclass
class ObservedCore(Core):
    """One solve of the model, as first observed. ``call``: its first :class:`SolveCall`;
    ``calls_per_forward``: how often it ran in one forward pass (an ODE-RNN's loop); ``path``: its
    name in the report (``SolveCall.name``: the call site, numbered where a site holds several)."""

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
    def step_size(self) -> float | None:
        """A fixed-step solve's step: its ``step_size`` option, else the grid's smallest spacing
        (torchdiffeq's fixed-grid methods step on the output grid when given no step size)."""
        if not self.fixed_step:
            return None
        s = self.call.settings
        given = s.get("step_size") or (s.get("options") or {}).get("step_size")
        if given:
            return float(given)
        grid = self.call.grid
        return min(abs(b - a) for a, b in zip(grid, grid[1:])) if grid and len(grid) > 1 else None

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
        if self.fixed_step:  # a fixed-step solve's tolerances are not used: its step size is what it runs
            out.pop("rtol", None), out.pop("atol", None)
            out["step_size"] = self.step_size
        out["gradient"] = c.route
        if self.calls_per_forward > 1:
            out["calls_per_forward"] = self.calls_per_forward
        return out

    def describe(self) -> str:
        s = self.settings()
        state = " + ".join(str(tuple(x)) for x in self.call.state)
        grid = f", grid {s['grid']}" if "grid" in s else ""
        if self.fixed_step:
            tol = f"fixed step {s['step_size']:g}" if s.get("step_size") else "fixed steps on the output grid"
        elif "rtol" in s and s.get("rtol") is not None:
            tol = f"rtol={s['rtol']:g}, atol={s['atol']:g}"
        else:
            tol = f"tol={s.get('tol', 'n/a')}, stop mode {s.get('stop_mode', 'n/a')}"
        repeat = f", {self.calls_per_forward} calls per forward pass" if self.calls_per_forward > 1 else ""
        return (
            f"{self.label} at {self.path}: state {state} ({s['dtype']}){grid}, {tol}, method "
            f"{s.get('method')}, gradient route {self.route}{repeat}"
        )


def observe(model: nn.Module, x, hook: SolveHook, *, training: bool = False) -> list[ObservedCore]:
    """The solves one forward pass of ``model`` on the first two rows of ``x`` makes, one
    :class:`ObservedCore` per solve, in the order first called (needs ``hook`` installed).
    ``training``: the pass in train mode with gradients on (the model's weights, modes and random
    state restored afterwards); otherwise in the mode the model is in, without gradients."""
    calls: list[SolveCall] = []
    with hook.listening(calls.append):
        if training:
            with kept_as_found(model), torch.enable_grad():
                model.train()
                I.call(model, I.take(x, slice(0, 2)))
        else:
            with torch.no_grad():
                I.call(model, I.take(x, slice(0, 2)))
    cores: dict[tuple, ObservedCore] = {}
    for c in calls:
        if c.key in cores:
            cores[c.key].calls_per_forward += 1
        else:
            kind = "deq" if c.entry == "torchdeq DEQ" else "ode"
            cde = cde_library(c.func) if kind == "ode" else None
            label = f"{cde} solve (a CDE, through {c.entry})" if cde else LABELS[c.entry]
            cores[c.key] = ObservedCore(c.name or c.site, None, kind, label, call=c)
    return list(cores.values())


def _route_of(core) -> dict:
    """What a solve is, for comparing the eval and the training pass."""
    if not is_observed(core):
        return {"solve": core.path or core.label, "route": core.route}
    s = core.settings()
    keep = ("entry", "method", "rtol", "atol", "step_size", "tol", "max_iter", "stop_mode", "gradient")
    out = {"solve": core.call.site, **{k: s[k] for k in keep if k in s}}
    out["calls"] = core.calls_per_forward
    return out


def training_route(model: nn.Module, x, hook: SolveHook, deployed: list[Core]) -> tuple[list[Core] | None, dict]:
    """The solves of the pass the model trains with (:func:`observe` with ``training=True``), against
    ``deployed`` (the eval pass's). Returns ``(cores, info)``: ``cores`` the training pass's (the
    library's blocks, then its observed solves) where it differs from the eval pass, else ``None``;
    ``info``: ``{"same": bool, "differences": [sentences], "error": why it could not be watched}``."""
    try:
        seen = module_cores(model) + observe(model, x, hook, training=True)
    except EventSolveError:  # a refusal of the training route's form (events): the audit stops on it
        raise
    except Exception as exc:  # a user's model in train mode: whatever it raises, the eval route is judged
        why = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        return None, {"same": None, "differences": [], "error": why}
    refuse_unsupported(model, hook)  # an SDE solved in training mode only is refused as well
    a, b = [_route_of(c) for c in deployed], [_route_of(c) for c in seen]
    if a == b:
        return None, {"same": True, "differences": []}
    diffs = []
    if len(a) != len(b):
        diffs.append(f"{len(b)} solve(s) in training mode, {len(a)} in eval mode")
    for k, (e, t) in enumerate(zip(a, b)):
        changed = [
            f"{name} {t.get(name)} in training, {e.get(name)} in eval"
            for name in sorted(set(e) | set(t))
            if e.get(name) != t.get(name)
        ]
        if changed:
            diffs.append(f"solve {k + 1} ({t['solve']}): " + ", ".join(changed))
    for t in b[len(a) :]:
        diffs.append(f"solve {t['solve']} runs in training mode only")
    return seen, {"same": False, "differences": diffs}


def find_solves(model: nn.Module, x, hook: SolveHook) -> list[Core]:
    """Every core of ``model``: its library blocks (:func:`~nodecourse.audit._discovery.module_cores`),
    then the solves one forward pass on two rows of ``x`` makes outside them (:func:`observe`).

    Raises :class:`~nodecourse.audit._discovery.CoreNotFoundError` naming what was looked for when
    there is none, and :class:`UnsupportedSolveError` naming the library when the model solves with
    one the audit cannot measure (:data:`UNSUPPORTED`), found or not beside it.
    """
    cores = module_cores(model) + observe(model, x, hook)
    refuse_unsupported(model, hook)
    if not cores:
        raise no_core_found(model, watched=True)
    return cores


#: What the audit would need to measure an SDE solve, and what it does now: said in every SDE refusal.
SDE_NEED = (
    "an SDE solve: its output changes with the Brownian path, and the audit's steps (a tolerance sweep, "
    "finite differences of the outputs) need a deterministic solve. To audit it the audit would need a sweep "
    "over dt with each path held fixed by a Brownian path seed (torchsde's BrownianInterval(entropy=...), "
    "nodecourse.sde.BrownianPath(seed=...)), checks of the strong order (the error against a fine-dt solve "
    "on the same path falling as dt^order) and gradients compared on the same path; it has none of these. "
    "It does not treat the SDE as an ODE (nodecourse.audit.TorchdiffeqBlock would audit another model, the "
    "drift alone, without its noise, so it is not offered): it measures nothing of this model rather than "
    "report numbers that are not the model's"
)

#: Libraries the audit cannot measure, and what it would need: named in the refusal.
UNSUPPORTED = {
    "torchdyn": (
        "torchdyn solves with its own solvers (torchdyn.numerics), which the audit does not watch; it "
        "would need the solve made through torchdiffeq.odeint or nodecourse.odeint (the same vector field "
        "passed to torchdiffeq.odeint in your forward) or the field in a nodecourse.models.ODEBlock"
    ),
    "torchsde": SDE_NEED,
    "nodecourse.sde": SDE_NEED,
    TORCHCDE_SDE_BACKEND: (
        "torchcde solves this CDE with torchsde's solvers (backend='torchsde'), which the audit does not "
        "change (their step is torchsde's dt, not a tolerance it sweeps); it audits torchcde.cdeint with "
        "backend='torchdiffeq' (torchcde's default): audit that version of the model"
    ),
}


class UnsupportedSolveError(CoreNotFoundError):
    """The model solves with a library the audit cannot measure (named, with what it would need)."""


def refuse_unsupported(model: nn.Module, hook: SolveHook) -> None:
    """Raise :class:`UnsupportedSolveError` when ``model`` holds a module of a library in
    :data:`UNSUPPORTED` (torchdyn's ``NeuralODE``) or called one of its solvers while watched
    (torchsde's ``sdeint`` or ``sdeint_adjoint``, the library's ``nodecourse.sde.sdeint``, torchcde's
    ``cdeint`` with ``backend="torchsde"``)."""
    found: dict[str, list[str]] = {}
    for path, m in model.named_modules():
        lib = type(m).__module__.split(".")[0]
        if lib in UNSUPPORTED:
            found.setdefault(lib, []).append(f"{type(m).__name__} at {path or '(the model itself)'}")
    for entry, site in hook.unsupported:
        lib = entry if entry in UNSUPPORTED else entry.rpartition(".")[0]  # torchsde, nodecourse.sde
        found.setdefault(lib, []).append(f"{entry} called at {site}")
    if found:
        parts = [f"{lib} ({', '.join(sorted(set(where))[:3])}): {UNSUPPORTED[lib]}" for lib, where in found.items()]
        raise UnsupportedSolveError(f"{type(model).__name__} solves with " + "; ".join(parts))


def is_observed(core) -> bool:
    return getattr(core, "observed", False)


__all__ = ["ObservedCore"]
