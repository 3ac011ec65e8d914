"""Finding a model's continuous and implicit cores, and turning their solver settings for a while.

A *core* is a module of the library that hands a state to a solver:

- :class:`nodecourse.models.ODEBlock` (also inside :class:`~nodecourse.AugmentedODE`, the course's
  classifiers, and :class:`nodecourse.audit.TorchdiffeqBlock`, the adapter for torchdiffeq models);
- :class:`nodecourse.models.latent.RecurrentEncoder` with an ODE between observations (ODE-RNN, the
  latent ODE's encoder) and :class:`~nodecourse.models.latent.LatentODE` (its ODE decoder);
- :class:`nodecourse.models.CNF`;
- :class:`nodecourse.DEQ` (a fixed-point solve).

Each ODE core holds one :class:`~nodecourse.SolveConfig` (``core.solver``) and passes all of it to
``odeint``, so the audit changes a setting by replacing that config (:func:`solver_settings`) and
changes nothing else. A DEQ's settings are its attributes (``tol``, ``max_iter``, ``backward``).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import nn

from nodecourse.deq import DEQ
from nodecourse.models import CNF, AugmentedODE, ODEBlock
from nodecourse.models.latent import LatentODE, RecurrentEncoder

LOOKED_FOR = (
    "calls to torchdiffeq.odeint, torchdiffeq.odeint_adjoint (also bound at import, e.g. "
    "'from torchdiffeq import odeint_adjoint as odeint') or nodecourse.odeint in one forward pass",
    "a torchdeq DEQ (torchdeq.get_deq) called in one forward pass",
    "nodecourse.models.ODEBlock (also inside AugmentedODE and nodecourse.audit.TorchdiffeqBlock)",
    "nodecourse.models.latent.RecurrentEncoder with kind='ode' (ODE-RNN)",
    "nodecourse.models.latent.LatentODE",
    "nodecourse.models.CNF",
    "nodecourse.DEQ",
)


class CoreNotFoundError(TypeError):
    """The model holds none of the library's continuous or implicit cores."""


@dataclass
class Core:
    """One continuous or implicit core found in a model.

    ``path``: its dotted name in the model (``""``: the model itself); ``kind``: ``"ode"`` or
    ``"deq"``; ``label``: what it is, in words; ``module``: the module itself.
    """

    path: str
    module: nn.Module
    kind: str
    label: str

    @property
    def field(self) -> nn.Module:
        """The function the solver evaluates: ``f(t, z)`` of an ODE core, ``f(z, x)`` of a DEQ."""
        m = self.module
        if isinstance(m, DEQ):
            return m.f
        if isinstance(m, RecurrentEncoder):
            return m.func
        if isinstance(m, LatentODE):
            return m.decoder_func
        if isinstance(m, ODEBlock):
            return m.field
        return m.dynamics.field  # CNF

    @property
    def horizon(self) -> float | None:
        """Length of time the ODE state is carried (``t1``; the latent models' scaled 48-hour
        horizon is 1); ``None`` for a DEQ."""
        if self.kind == "deq":
            return None
        return float(getattr(self.module, "t1", 1.0))

    @property
    def can_extend_horizon(self) -> bool:
        """Whether the model's own horizon is a setting (``t1``), rather than set by the data."""
        return self.kind == "ode" and hasattr(self.module, "t1")

    @property
    def fixed_step(self) -> bool:
        return self.kind == "ode" and self.module.solver.step_size is not None

    @property
    def route(self) -> str:
        """The gradient route the model trains with: ``backprop``/``adjoint``/``checkpoint``, or
        ``implicit``/``unrolled`` for a DEQ."""
        return self.module.backward if self.kind == "deq" else self.module.solver.gradient

    def settings(self) -> dict:
        """The solver settings, as plain values (echoed in the report)."""
        m = self.module
        if self.kind == "deq":
            return {
                "method": m.method,
                "tol": m.tol,
                "max_iter": m.max_iter,
                "backward": m.backward,
                "backward_tol": m.backward_tol,
                "backward_max_iter": m.backward_max_iter,
                "stop_mode": m.stop_mode,
            }
        s = m.solver
        method = s.method if isinstance(s.method, str) else getattr(s.method, "name", repr(s.method))
        out = {"method": method, "gradient": s.gradient, "horizon": self.horizon}
        if s.step_size is not None:
            out["step_size"] = s.step_size
        else:
            out.update(rtol=s.rtol, atol=s.atol)
        backend = getattr(m, "backend", None)
        if backend is not None:
            out["backend"] = backend
        return out

    def describe(self) -> str:
        where = self.path or "(the model itself)"
        items = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.settings().items())
        return f"{self.label} at {where}: {items}"


def _label(name: str, module: nn.Module, parents: dict[str, nn.Module]) -> str | None:
    if isinstance(module, DEQ):
        return "DEQ"
    if isinstance(module, CNF):
        return "CNF"
    if isinstance(module, LatentODE):
        return "latent ODE decoder"
    if isinstance(module, RecurrentEncoder):
        if module.kind != "ode":
            return None
        return "ODE-RNN encoder" if not isinstance(parents.get(name), LatentODE) else "latent ODE encoder"
    if isinstance(module, ODEBlock):
        if isinstance(parents.get(name), AugmentedODE):
            return "AugmentedODE"
        return type(module).__name__ if type(module) is not ODEBlock else "ODEBlock"
    return None


def module_cores(model: nn.Module) -> list[Core]:
    """The library's blocks in ``model``, in the order :meth:`~torch.nn.Module.named_modules` walks
    them (possibly none)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model is a {type(model).__name__}; give the nn.Module to audit")
    modules = dict(model.named_modules())
    parents = {}
    for name in modules:
        if name:
            parents[name] = modules[name.rpartition(".")[0]]
    cores = []
    for name, module in modules.items():
        label = _label(name, module, parents)
        if label is not None:
            cores.append(Core(name, module, "deq" if label == "DEQ" else "ode", label))
    return cores


def no_core_found(model: nn.Module, watched: bool) -> CoreNotFoundError:
    """The error for a model with no core: what was looked for, and what to do."""
    looked = "; ".join(LOOKED_FOR)
    how = "" if watched else " (no forward pass was watched: give inputs to find solves by calling)"
    return CoreNotFoundError(
        f"no solve found in {type(model).__name__}{how}: looked for {looked}. A solve reached only through "
        "a name the audit cannot see (an attribute such as self.solve = odeint, set before the audit) "
        "can be passed through nodecourse.audit.TorchdiffeqBlock (torchdiffeq's defaults); a model that "
        "makes no solve has nothing for this audit to measure"
    )


def find_cores(model: nn.Module) -> list[Core]:
    """Every library block of ``model`` (:func:`module_cores`); the solves a forward pass makes
    outside them are found by :func:`nodecourse.audit._observed.find_solves`.

    Raises :class:`CoreNotFoundError` naming what was looked for when there is none.
    """
    cores = module_cores(model)
    if not cores:
        raise no_core_found(model, watched=False)
    return cores


def core_parameters(core: Core) -> list[nn.Parameter]:
    """The trainable parameters of the core's field (where the gradient routes differ); ``[]`` when
    the field is not a module (a plain function: the caller takes the model's parameters)."""
    f = core.field
    return [p for p in f.parameters() if p.requires_grad] if isinstance(f, nn.Module) else []


@contextlib.contextmanager
def solver_settings(cores: list[Core], *, ode: dict | None = None, deq: dict | None = None) -> Iterator[None]:
    """Within the block, every ODE core's :class:`~nodecourse.SolveConfig` has ``ode`` replaced
    (``SolveConfig.replace``, so every value is checked) and every DEQ has the attributes ``deq``;
    the old settings come back afterwards, also after an error."""
    saved = []
    observed = {}
    for core in cores:
        if getattr(core, "observed", False):
            changes = _observed_changes(core, ode if core.kind == "ode" else deq)
            if changes:
                observed[core.key] = changes
    try:
        for core in cores:
            m = core.module
            if getattr(core, "observed", False):
                continue
            if core.kind == "ode" and ode:
                saved.append((m, "solver", m.solver))
                m.solver = m.solver.replace(**ode)
            elif core.kind == "deq" and deq:
                for key, value in deq.items():
                    if not hasattr(m, key):
                        raise AttributeError(f"DEQ has no setting {key!r}")
                    saved.append((m, key, getattr(m, key)))
                    setattr(m, key, value)
        with _hook_overriding(observed):
            yield
    finally:
        for m, key, value in reversed(saved):
            setattr(m, key, value)


def _observed_changes(core, changes: dict | None) -> dict:
    """A step's settings for an observed solve, in the hook's words (``gradient`` is its ``route``;
    a step budget has no torchdiffeq equivalent and is left out)."""
    out = {}
    for key, value in (changes or {}).items():
        if key in ("rtol", "atol", "method", "step_size", "tol", "max_iter", "unroll", "unroll_steps"):
            out[key] = value
        elif key in ("gradient", "backward"):
            out["route"] = value
    return out


@contextlib.contextmanager
def _hook_overriding(changes: dict):
    if not changes:
        yield
        return
    from nodecourse.audit._hook import active

    hook = active()
    if hook is None:
        raise RuntimeError("observed solves are changed through the audit's SolveHook, which is not installed")
    with hook.overriding(changes):
        yield


@contextlib.contextmanager
def horizon_scaled(cores: list[Core], factor: float) -> Iterator[list[Core]]:
    """Within the block, every core whose horizon is a setting (``t1``; an observed solve's grid,
    stretched about its first time) runs ``factor`` times as long; yields those cores (none: the
    model's horizon is set by its data)."""
    changed = [c for c in cores if c.can_extend_horizon]
    saved = [(c.module, c.module.t1) for c in changed if not getattr(c, "observed", False)]
    observed = {c.key: {"horizon": factor} for c in changed if getattr(c, "observed", False)}
    try:
        for m, t1 in saved:
            m.t1 = t1 * factor
        with _hook_overriding(observed):
            yield changed
    finally:
        for m, t1 in saved:
            m.t1 = t1


def scaled_settings(core: Core, factor: float) -> tuple[dict, str]:
    """Test-time settings ``factor`` times looser (``factor > 1``) or tighter than deployed, for the
    tolerance sweep: the step size of a fixed-step ODE, ``rtol`` and ``atol`` of an adaptive one,
    ``tol`` of a DEQ (with more iterations allowed when tighter). Returns ``(changes, label)``;
    ``changes`` is ``None`` for a setting the state's dtype cannot resolve (a tolerance below
    :data:`RESOLVABLE` x its machine epsilon: float32 at torchdiffeq's rtol 1e-7 made tighter)."""
    if getattr(core, "observed", False):
        return _observed_scaled(core, factor)
    m = core.module
    if core.kind == "deq":
        extra = 1 if factor >= 1 else 4  # a tighter tolerance needs more iterations
        return {"tol": m.tol * factor, "max_iter": m.max_iter * extra}, f"tol {m.tol * factor:.0e}"
    s = m.solver
    if s.step_size is not None:
        size = s.step_size * factor
        return {"step_size": size}, f"step {size:.3g}"
    rtol = min(s.rtol * factor, RTOL_CAP)
    return {"rtol": rtol, "atol": s.atol * factor}, _rtol_label(rtol, s.rtol, factor)


RTOL_CAP = 0.5  # a relative tolerance above one half accepts any step


def _rtol_label(rtol: float, deployed: float, factor: float) -> str:
    """The rtol a sweep point ran at, saying where the cap made it other than ``factor`` x deployed."""
    if rtol < deployed * factor * (1 - 1e-9):
        same = ", the deployed rtol" if math.isclose(rtol, deployed) else ""
        return f"rtol {rtol:.0e} (capped at {RTOL_CAP:g}{same}; {factor:g}x deployed would be {deployed * factor:.0e})"
    return f"rtol {rtol:.0e}"


RESOLVABLE = 10.0  # a relative tolerance under 10 machine epsilons asks for digits the dtype does not hold


def _observed_scaled(core, factor: float) -> tuple[dict | None, str]:
    s = core.call.settings
    eps = torch.finfo(core.dtype).eps if core.dtype.is_floating_point else 2.0**-52
    if core.kind == "deq":
        tol = s["tol"] * factor
        extra = 1 if factor >= 1 else 4
        return {"tol": tol, "max_iter": int(s["max_iter"] * extra)}, f"tol {tol:.0e}"
    if core.fixed_step:
        grid = core.call.grid
        base = core.step_size or min(abs(b - a) for a, b in zip(grid, grid[1:]))
        size = base * factor
        return {"step_size": size}, f"step {size:.3g}"
    rtol, atol = min(s["rtol"] * factor, RTOL_CAP), s["atol"] * factor
    if factor < 1.0 and rtol < RESOLVABLE * eps:  # only a tighter setting than deployed is refused
        return None, f"rtol {rtol:.0e} (below {RESOLVABLE:g} x {core.call.dtype} epsilon {eps:.1e}: not resolvable)"
    return {"rtol": rtol, "atol": atol}, _rtol_label(rtol, s["rtol"], factor)


def replace_module(model: nn.Module, path: str, new: nn.Module) -> None:
    """Put ``new`` where ``model``'s submodule ``path`` is (``path`` non-empty)."""
    parent_name, _, attr = path.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, new)


__all__ = ["Core", "CoreNotFoundError", "LOOKED_FOR", "find_cores"]
