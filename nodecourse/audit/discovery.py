"""Finding a model's continuous and implicit cores, and turning their solver settings for a while.

A *core* is a module of the library that hands a state to a solver:

- :class:`nodecourse.models.ODEBlock` (also inside :class:`~nodecourse.AugmentedODE`, the course's
  classifiers, and :class:`nodecourse.audit.TorchdiffeqBlock`, the adapter for torchdiffeq models);
- :class:`nodecourse.models.latent.RecurrentEncoder` with an ODE between observations (ODE-RNN, the
  latent ODE's encoder) and :class:`~nodecourse.models.latent.LatentODE` (its ODE decoder);
- :class:`nodecourse.models.flows.CNF`;
- :class:`nodecourse.DEQ` (a fixed-point solve).

Each ODE core holds one :class:`~nodecourse.SolveConfig` (``core.solver``) and passes all of it to
``odeint``, so the audit changes a setting by replacing that config (:func:`solver_settings`) and
changes nothing else. A DEQ's settings are its attributes (``tol``, ``max_iter``, ``backward``).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator

from torch import nn

from nodecourse.deq import DEQ
from nodecourse.models import ODEBlock
from nodecourse.models.augment import AugmentedODE
from nodecourse.models.flows import CNF
from nodecourse.models.latent import LatentODE, RecurrentEncoder

LOOKED_FOR = (
    "nodecourse.models.ODEBlock (also inside AugmentedODE and nodecourse.audit.TorchdiffeqBlock)",
    "nodecourse.models.latent.RecurrentEncoder with kind='ode' (ODE-RNN)",
    "nodecourse.models.latent.LatentODE",
    "nodecourse.models.flows.CNF",
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
            return {"solver": m.solver, "tol": m.tol, "max_iter": m.max_iter, "backward": m.backward,
                    "backward_tol": m.backward_tol, "backward_max_iter": m.backward_max_iter,
                    "stop_mode": m.stop_mode}
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


def find_cores(model: nn.Module) -> list[Core]:
    """Every core of ``model``, in the order :meth:`~torch.nn.Module.named_modules` walks them.

    Raises :class:`CoreNotFoundError` naming what was looked for when there is none.
    """
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
    if not cores:
        looked = "; ".join(LOOKED_FOR)
        raise CoreNotFoundError(
            f"no continuous or implicit core found in {type(model).__name__}: looked for {looked}. "
            "A model built on torchdiffeq.odeint: replace the module that calls it by "
            "nodecourse.audit.TorchdiffeqBlock(func, t1=..., method=..., rtol=..., atol=...) (same field, "
            "same weights; see lesson 9); a discrete model has nothing for this audit to measure")
    return cores


def core_parameters(core: Core) -> list[nn.Parameter]:
    """The trainable parameters of the core's field (where the gradient routes differ)."""
    return [p for p in core.field.parameters() if p.requires_grad]


@contextlib.contextmanager
def solver_settings(cores: list[Core], *, ode: dict | None = None, deq: dict | None = None) -> Iterator[None]:
    """Within the block, every ODE core's :class:`~nodecourse.SolveConfig` has ``ode`` replaced
    (``SolveConfig.replace``, so every value is checked) and every DEQ has the attributes ``deq``;
    the old settings come back afterwards, also after an error."""
    saved = []
    try:
        for core in cores:
            m = core.module
            if core.kind == "ode" and ode:
                saved.append((m, "solver", m.solver))
                m.solver = m.solver.replace(**ode)
            elif core.kind == "deq" and deq:
                for key, value in deq.items():
                    if not hasattr(m, key):
                        raise AttributeError(f"DEQ has no setting {key!r}")
                    saved.append((m, key, getattr(m, key)))
                    setattr(m, key, value)
        yield
    finally:
        for m, key, value in reversed(saved):
            setattr(m, key, value)


@contextlib.contextmanager
def horizon_scaled(cores: list[Core], factor: float) -> Iterator[list[Core]]:
    """Within the block, every core whose horizon is a setting (``t1``) runs ``factor`` times as long;
    yields those cores (none: the model's horizon is set by its data)."""
    changed = [c for c in cores if c.can_extend_horizon]
    saved = [(c.module, c.module.t1) for c in changed]
    try:
        for c in changed:
            c.module.t1 = c.module.t1 * factor
        yield changed
    finally:
        for m, t1 in saved:
            m.t1 = t1


def scaled_settings(core: Core, factor: float) -> tuple[dict, str]:
    """Test-time settings ``factor`` times looser (``factor > 1``) or tighter than deployed, for the
    tolerance sweep: the step size of a fixed-step ODE, ``rtol`` and ``atol`` of an adaptive one,
    ``tol`` of a DEQ (with more iterations allowed when tighter). Returns ``(changes, label)``."""
    m = core.module
    if core.kind == "deq":
        extra = 1 if factor >= 1 else 4  # a tighter tolerance needs more iterations
        return {"tol": m.tol * factor, "max_iter": m.max_iter * extra}, f"tol {m.tol * factor:.0e}"
    s = m.solver
    if s.step_size is not None:
        size = s.step_size * factor
        return {"step_size": size}, f"step {size:.3g}"
    rtol = min(s.rtol * factor, 0.5)
    return {"rtol": rtol, "atol": s.atol * factor}, f"rtol {rtol:.0e}"


def replace_module(model: nn.Module, path: str, new: nn.Module) -> None:
    """Put ``new`` where ``model``'s submodule ``path`` is (``path`` non-empty)."""
    parent_name, _, attr = path.rpartition(".")
    parent = model.get_submodule(parent_name) if parent_name else model
    setattr(parent, attr, new)


__all__ = ["Core", "CoreNotFoundError", "LOOKED_FOR", "core_parameters", "find_cores", "horizon_scaled",
           "replace_module", "scaled_settings", "solver_settings"]
