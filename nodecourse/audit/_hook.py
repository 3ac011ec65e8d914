"""Observing the solves a model makes, and changing them, without touching the model's code.

For the audit's duration (:class:`SolveHook`, a context manager) the entry points a practitioner
calls are replaced by wrappers:

- ``torchdiffeq.odeint`` and ``torchdiffeq.odeint_adjoint``: in the ``torchdiffeq`` package *and in
  every loaded module's globals that hold the original function*, so a name bound at import
  (``from torchdiffeq import odeint_adjoint as odeint``, torchdiffeq's own examples) is caught too;
  torchdiffeq's internal modules keep the originals (its adjoint calls ``odeint`` backwards);
- ``nodecourse.odeint``, called directly by the user's code (the library's blocks are found by
  walking the model: :mod:`nodecourse.audit._discovery`);
- ``forward`` of torchdeq's DEQ classes (``get_deq``'s modules), patched on the class.

Everything is put back on exit, also after an error. A name held somewhere else (an attribute
``self.solve = odeint``, a closure) is not reached: the audit then says it found no solve.

Each intercepted call is one :class:`SolveCall` (its call site, state shapes, grid, tolerances,
method, gradient route, work) handed to every listener. A *solve* (``key``) is a call's identity, not
its source line: the entry point, the user's call site, the function solved (a module by its
parameters, a function by its code) and the settings it was called with. Two solves through one
helper (the same line, another field or another tolerance) are two solves, each swept from its own
deployed setting; a loop calling the same field with the same settings (an ODE-RNN) is one solve
called several times. Each solve gets a ``name`` (its call site, numbered where a site holds
several), the same for the whole audit.

A failure of the hook's own bookkeeping (reading the call's arguments or its output) raises
:class:`HookError` naming the solve, never an error that reads as the model's or the data's.
SDE solves the audit cannot measure (torchsde's ``sdeint`` and ``sdeint_adjoint``, the library's
``nodecourse.sde.sdeint``: :data:`UNSUPPORTED_ENTRIES`) are recorded when called
(:attr:`SolveHook.unsupported`) so the audit can refuse them by name.

A solve with events (``odeint(..., event_fn=...)`` of torchdiffeq or of the library, and either's
``odeint_event``, whatever ``odeint_interface`` it is given, its default bound at definition
included) is refused when called, with :class:`EventSolveError` naming events, the solve and what the
audit would need: the ``odeint_event`` entries are wrapped themselves, so the refusal does not depend
on which interface they call, and so are the event searches (torchdiffeq's solvers'
``integrate_until_event``, patched on the classes, and the library's), so an event solve through a
name the entry points' patches do not reach (``self.odeint = odeint`` set before the audit) is
refused too.

:attr:`SolveHook.overrides` changes a solve's calls: ``rtol``, ``atol``,
``method``, ``step_size``, ``horizon`` (the grid stretched about its first time), ``route``
(``"backprop"``: torchdiffeq's ``odeint``; ``"adjoint"``: its ``odeint_adjoint``), for a DEQ ``tol``,
``max_iter`` and ``unroll`` (the block applied ``k`` times from the initial state, with backprop).
A DEQ given ``max_iter`` in training mode is also given it as torchdeq's per-call ``f_max_iter``, so
its training-mode output is the iterate at the new budget (torchdeq otherwise samples the index fixed
at its construction). Its convergence is read the way torchdeq stops: the lowest residual under its
``f_stop_mode`` (``"abs"`` or ``"rel"``) below ``f_tol``.

Why this module is long: every patch it makes and its undo are in :class:`SolveHook` (about 330 lines) and the
wrappers it installs, kept together so that a reader can check that each entry point replaced is put back on
exit, also after an error.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn

# Callers in these modules are the library's own cores (found by walking the model) or a solver
# calling another: their calls pass through unobserved.
LIBRARY_CALLERS = (
    "nodecourse.models",
    "nodecourse.solvers",
    "nodecourse.deq",
    "nodecourse.audit",
    "nodecourse.measure",
    "torchdiffeq",
    "torchdeq",
)
# Modules whose bindings stay the originals: torchdiffeq's adjoint solves backwards through its own `odeint`.
KEEP_ORIGINAL = ("torchdiffeq._impl.adjoint", "torchdiffeq._impl.odeint", "nodecourse.audit")
TORCHDIFFEQ_DEFAULTS = {"rtol": 1e-7, "atol": 1e-9, "method": "dopri5"}
#: Entry points of libraries the audit cannot measure, watched so the refusal names them: ``(module,
#: function)``; the library's own ``sdeint`` is watched always, torchsde's where it is loaded.
UNSUPPORTED_ENTRIES = (
    ("torchsde", "sdeint"),
    ("torchsde", "sdeint_adjoint"),
    ("nodecourse.sde", "sdeint"),
)
#: The entry recorded for a torchsde solve that torchcde's ``cdeint(..., backend="torchsde")`` makes.
TORCHCDE_SDE_BACKEND = "torchcde.cdeint (backend='torchsde')"


class HookError(RuntimeError):
    """The audit's own observation of a solve failed (not the model, not the data): names the solve."""


class EventSolveError(HookError, TypeError):
    """The model solves with events (``event_fn=``, ``odeint_event``): a form the audit refuses, by
    name, with what it would need (raised when the solve is called, so never read as the data's). A
    ``TypeError`` too, as the audit's other refusals of a model's form are: the command line prints it
    as a refusal, not a crash."""


#: What the audit would need to measure a solve with events; said in every :class:`EventSolveError`.
EVENTS_NEED = (
    "the audit does not measure solves with events: its steps change a solve's tolerance, method and "
    "horizon and compare the outputs on a fixed grid, while an event solve ends at a time that moves "
    "with every change; it would need the event time read as part of the solve's output (step 2: the "
    "work up to the event, the event search included; step 3: the event time's change with the "
    "tolerance beside the state's; step 4: a longer horizon does not apply, the event ends the solve; "
    "step 5: the gradient through the event time, by the implicit function theorem, against a tight "
    "reference), which it does not do. To audit the rest of the model, audit a version whose solve "
    "runs to a fixed end time (the same field, no event_fn)"
)


FIXED_GRID = ("euler", "midpoint", "rk4", "heun2", "heun3", "explicit_adams", "implicit_adams", "fixed_adams")

_ACTIVE: "SolveHook | None" = None


@dataclass
class SolveCall:
    """One intercepted solve. ``key``: ``(entry, file, line)`` of the call site (one *solve*);
    ``state``: the shapes of the state's tensors (one for a tensor state, several for a tuple);
    ``site``: ``file.py:line (function)`` (the file's name only: no machine path in a report; ``key``
    holds the full path); ``name``: the solve's name in the report (the site, numbered ``#2``... where
    one site holds several solves); ``grid``: the output times (``None`` for a DEQ); ``nfe``:
    evaluations of the field (DEQ: iterations, the mean over the batch); ``state_max``: the largest
    ``|z|`` at the last output time (a DEQ: of the fixed point)."""

    key: tuple
    entry: str
    site: str
    state: list[tuple[int, ...]]
    dtype: str
    grid: list[float] | None
    settings: dict
    route: str
    nfe: float | None = None
    seconds: float = 0.0
    status: str = "success"
    unconverged: int = 0
    state_max: float | None = None
    name: str = ""
    func: Any = field(default=None, repr=False)

    @property
    def trajectory(self) -> bool:
        """Output on a grid of more than two times (a trajectory, not ``z(t0) -> z(t1)``)."""
        return self.grid is not None and len(self.grid) > 2


class _Counted(nn.Module):
    """``func`` with its calls counted (and, when asked, its ``(t, z)`` recorded); ``func`` stays a
    submodule, so torchdiffeq's adjoint finds its parameters."""

    def __init__(self, func, recorder: list | None, key=None):
        super().__init__()
        object.__setattr__(self, "key", key)
        if isinstance(func, nn.Module):
            self.func = func
        else:
            object.__setattr__(self, "func", func)
        object.__setattr__(self, "recorder", recorder)
        self.n = 0

    def forward(self, t, y):
        self.n += 1
        if self.recorder is not None and isinstance(y, torch.Tensor) and len(self.recorder) < 4096:
            self.recorder.append((self.key, self.func, t.detach(), y.detach()))
        return self.func(t, y)


# Libraries whose frames are passed over to find the user's call site (torchcde's cdeint calls
# torchdiffeq from its own file: the site is the user's cdeint call).
# The library's cdeint calls nodecourse.odeint from its own file in the same way, and its sdeint is
# named at the user's call.
PASS_THROUGH = ("torch.", "torchdeq", "torchdiffeq", "torchcde", "torchsde", "nodecourse.cde", "nodecourse.sde")


def _caller(depth: int = 2):
    """The first frame outside torch, torchdeq, torchdiffeq, torchcde, torchsde, the library's
    ``cde`` and ``sde`` packages and this module: ``(module, file, line, name)``."""
    frame = sys._getframe(depth)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name.startswith(PASS_THROUGH) or name == "torch" or name == __name__):
            code = frame.f_code
            return name, code.co_filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name)
        frame = frame.f_back
    return "", "?", 0, "?"


def _shapes(y) -> list[tuple[int, ...]]:
    return [tuple(y.shape)] if isinstance(y, torch.Tensor) else [tuple(p.shape) for p in y]


def _first(y) -> torch.Tensor:
    return y if isinstance(y, torch.Tensor) else y[0]


class SolveHook:
    """Context manager: the solves made inside it are observed and may be changed (module docstring).

    ``listeners``: callables given each :class:`SolveCall`; ``overrides``: ``{key: {setting: value}}``
    (the key ``"*"`` applies to every solve); ``recorder``: when a list, the ``(func, t, z)`` of every
    field evaluation of a tensor-state ODE solve is appended to it as ``(key, func, t, z)`` (a DEQ:
    its fixed point, ``t`` None), for the stiffness probe.
    """

    def __init__(self):
        self.listeners: list[Callable[[SolveCall], None]] = []
        self.overrides: dict = {}
        self.recorder: list | None = None
        self.depth = 0
        self.names: dict = {}  # key -> the solve's name, stable for the hook's life
        self.unsupported: list[tuple[str, str]] = []  # (entry, site) of calls the audit cannot measure
        self._patched: list[tuple[Any, str, Any]] = []
        self._previous = None

    # --- installing -------------------------------------------------------------------------

    def __enter__(self) -> "SolveHook":
        global _ACTIVE
        self._previous = _ACTIVE
        if self._previous is not None:  # nested: the outer hook keeps observing
            return self._previous
        _ACTIVE = self
        try:
            self._install()
        except BaseException:
            self._uninstall()
            _ACTIVE = None
            raise
        return self

    def __exit__(self, *exc) -> None:
        global _ACTIVE
        if self._previous is not None:
            return
        self._uninstall()
        _ACTIVE = None

    def _install(self) -> None:
        originals = {}
        try:
            from torchdiffeq._impl.adjoint import odeint_adjoint as tdq_adjoint
            from torchdiffeq._impl.odeint import odeint as tdq_odeint

            originals[id(tdq_odeint)] = (tdq_odeint, _ode_wrapper(tdq_odeint, "torchdiffeq.odeint"))
            originals[id(tdq_adjoint)] = (tdq_adjoint, _ode_wrapper(tdq_adjoint, "torchdiffeq.odeint_adjoint"))
        except ImportError:  # torchdiffeq is not installed: nothing of it to observe
            pass
        try:  # torchdiffeq's events (odeint_event came with 0.2.0)
            from torchdiffeq._impl.odeint import odeint_event as tdq_event

            originals[id(tdq_event)] = (tdq_event, _event_wrapper(tdq_event, "torchdiffeq.odeint_event"))
        except ImportError:
            pass
        from nodecourse.solvers import odeint as nc_odeint
        from nodecourse.solvers import odeint_event as nc_event

        originals[id(nc_odeint)] = (nc_odeint, _ode_wrapper(nc_odeint, "nodecourse.odeint"))
        originals[id(nc_event)] = (nc_event, _event_wrapper(nc_event, "nodecourse.odeint_event"))
        import nodecourse.sde  # noqa: F401  (the library's own: watched whether or not the model imported it)

        for lib, name in UNSUPPORTED_ENTRIES:
            module = sys.modules.get(lib)
            original = getattr(module, name, None) if module is not None else None
            if callable(original):
                originals[id(original)] = (original, _unsupported_wrapper(original, f"{lib}.{name}"))
        for mod_name, module in list(sys.modules.items()):
            if module is None or mod_name.startswith(KEEP_ORIGINAL):
                continue
            d = getattr(module, "__dict__", None)
            if not isinstance(d, dict):
                continue
            for name, value in list(d.items()):
                hit = originals.get(id(value))
                if hit is not None and value is hit[0]:
                    self._patched.append((module, name, value))
                    setattr(module, name, hit[1])
        self._patch_event_searches()
        if "torchdeq" in sys.modules:  # a model built with torchdeq has imported it
            from torchdeq.core import DEQBase

            todo = [DEQBase]
            while todo:
                cls = todo.pop()
                todo.extend(cls.__subclasses__())
                if "forward" in cls.__dict__ and cls is not DEQBase:
                    original = cls.__dict__["forward"]
                    self._patched.append((cls, "forward", original))
                    setattr(cls, "forward", _deq_wrapper(original))

    def _patch_event_searches(self) -> None:
        """The event searches themselves (torchdiffeq's solvers' ``integrate_until_event``, the
        library's ``_solve_event``) refuse too: an event solve through a name the entry points' patches
        do not reach (``self.odeint = odeint`` set before the audit) is found all the same."""
        try:
            from torchdiffeq._impl import solvers as tdq_solvers
        except ImportError:  # torchdiffeq is not installed: no event search of its to watch
            tdq_solvers = None
        todo = [c for c in vars(tdq_solvers).values() if isinstance(c, type)] if tdq_solvers else []
        seen: set = set()
        while todo:
            cls = todo.pop()
            if cls in seen:
                continue
            seen.add(cls)
            todo.extend(cls.__subclasses__())
            original = cls.__dict__.get("integrate_until_event")
            if callable(original):
                self._patched.append((cls, "integrate_until_event", original))
                setattr(cls, "integrate_until_event", _event_search_wrapper(original))
        import importlib

        nc_module = importlib.import_module("nodecourse.solvers._odeint")  # the module: its name is also the function's
        original = nc_module._solve_event
        self._patched.append((nc_module, "_solve_event", original))
        setattr(nc_module, "_solve_event", _event_search_wrapper(original))

    def _uninstall(self) -> None:
        for owner, name, value in reversed(self._patched):
            setattr(owner, name, value)
        self._patched = []

    # --- overriding and telling -------------------------------------------------------------

    def override_for(self, key) -> dict:
        out = dict(self.overrides.get("*", {}))
        out.update(self.overrides.get(key, {}))
        return out

    @contextlib.contextmanager
    def overriding(self, changes: dict):
        """Within the block, ``changes`` (``{key: {setting: value}}``) added to :attr:`overrides`."""
        saved = {k: dict(v) for k, v in self.overrides.items()}
        try:
            for key, values in changes.items():
                self.overrides.setdefault(key, {}).update(values)
            yield
        finally:
            self.overrides = saved

    @contextlib.contextmanager
    def recording(self):
        """Within the block, field evaluations ``(func, t, z)`` of tensor-state ODE solves are kept."""
        saved, self.recorder = self.recorder, []
        try:
            yield self.recorder
        finally:
            self.recorder = saved

    def tell(self, call: SolveCall) -> None:
        for listener in list(self.listeners):
            listener(call)

    @contextlib.contextmanager
    def listening(self, listener):
        self.listeners.append(listener)
        try:
            yield
        finally:
            self.listeners.remove(listener)

    # --- an ODE solve -------------------------------------------------------------------------

    def name_of(self, key, site: str) -> str:
        """The solve's name in the report: its site, numbered where the site holds several solves."""
        if key not in self.names:
            same = sum(1 for k in self.names if k[1:3] == key[1:3])
            self.names[key] = site if same == 0 else f"{site} #{same + 1}"
        return self.names[key]

    def solve_ode(self, entry: str, original, site, func, y0, t, kwargs: dict):
        _, filename, line, qualname = site
        where = f"{entry} at {_site(filename, line, qualname)}"
        with _bookkeeping(where, "reading the call"):
            key = (entry, filename, line, _identity(func), _settings_signature(kwargs))
        ov = self.override_for(key)
        kw = dict(kwargs)
        for name in ("rtol", "atol", "method"):
            if name in ov:
                kw[name] = ov[name]
        native = entry == "nodecourse.odeint"  # its step size is a keyword, torchdiffeq's an option
        if "step_size" in ov:
            if native:
                kw["step_size"] = ov["step_size"]
            else:
                kw["options"] = {**(kw.get("options") or {}), "step_size": ov["step_size"]}
        if "horizon" in ov:  # the grid stretched about its first time
            t = t[0] + (t - t[0]) * ov["horizon"]
        fn, route = original, _route(entry, kw)
        if "route" in ov and entry.startswith("torchdiffeq"):
            fn = _torchdiffeq(ov["route"])
            route = ov["route"]
            if route == "backprop":  # odeint takes none of odeint_adjoint's own keywords
                kw = {k: v for k, v in kw.items() if not k.startswith("adjoint_")}
        elif "route" in ov and entry == "nodecourse.odeint":
            kw["gradient"] = ov["route"]
            route = ov["route"]
        if "unroll_steps" in ov:  # the baseline: fixed rk4 steps per output interval
            span = float((t[1:] - t[:-1]).abs().min()) if len(t) > 1 else 1.0
            kw["method"] = "rk4"
            if native:
                kw["step_size"] = span / ov["unroll_steps"]
            else:
                kw["options"] = {"step_size": span / ov["unroll_steps"]}
            kw.pop("rtol", None), kw.pop("atol", None)
        adjoint_needs_module = (
            (fn is not original or entry.endswith("adjoint"))
            and route == "adjoint"
            and entry.startswith("torchdiffeq")
            and not isinstance(func, nn.Module)
            and "adjoint_params" not in kw
        )
        counted = None if adjoint_needs_module or native else _Counted(func, self.recorder, key)
        with _bookkeeping(where, "reading the call"):
            settings = {k: kw.get(k, TORCHDIFFEQ_DEFAULTS.get(k)) for k in ("rtol", "atol", "method")}
            if native:
                settings = {k: kw.get(k, d) for k, d in (("rtol", 1e-7), ("atol", 1e-9), ("method", "dopri5"))}
                if kw.get("step_size") is not None:
                    settings["step_size"] = kw["step_size"]
            if kw.get("options"):
                settings["options"] = {k: v for k, v in kw["options"].items() if isinstance(v, (int, float, str))}
            call = SolveCall(
                key,
                entry,
                _site(filename, line, qualname),
                _shapes(y0),
                str(_first(y0).dtype).replace("torch.", ""),
                [float(v) for v in t.detach().cpu().reshape(-1)],
                settings,
                route,
                func=func,
            )
            call.name = self.name_of(key, call.site)
        start = time.perf_counter()
        self.depth += 1
        try:
            out = fn(counted if counted is not None else func, y0, t, **kw)
        except BaseException as exc:
            call.status = type(exc).__name__
            raise
        finally:
            self.depth -= 1
            call.seconds = time.perf_counter() - start
            if counted is not None:
                call.nfe = float(counted.n)
            self.tell(call)
        with _bookkeeping(where, "reading its output"):
            if native:
                call.nfe = float(out.stats["nfe"])
                call.status = getattr(out.status, "name", str(out.status)).lower()
                with torch.no_grad():
                    call.state_max = float(out.ys[-1].detach().abs().max())
            else:
                with torch.no_grad():  # the state at the last output time (time is the first dimension)
                    call.state_max = float(_first(out)[-1].detach().abs().max())
        return out

    # --- a torchdeq solve ---------------------------------------------------------------------

    def solve_deq(self, original, deq, site, func, z_init, args, kwargs):
        _, filename, line, qualname = site
        where = f"torchdeq DEQ at {_site(filename, line, qualname)}"
        with _bookkeeping(where, "reading the call"):
            key = ("torchdeq", filename, line, ("module", type(deq).__qualname__, id(deq)), ())
            ov = self.override_for(key)
            route = _deq_route(deq)
            call = SolveCall(
                key,
                "torchdeq DEQ",
                _site(filename, line, qualname),
                _shapes(z_init),
                str(_first(z_init).dtype).replace("torch.", ""),
                None,
                _deq_settings(deq),
                route,
                func=func,
            )
            call.name = self.name_of(key, call.site)
        start = time.perf_counter()
        if "unroll" in ov:  # the block applied k times, backprop through every application
            z = z_init
            for _ in range(int(ov["unroll"])):
                z = func(z)
            call.nfe, call.seconds = float(ov["unroll"]), time.perf_counter() - start
            call.route = "unrolled (backprop)"
            self.tell(call)
            return [z], {}
        saved = {}
        changes = {}
        if "tol" in ov:
            changes["f_tol"] = ov["tol"]
        if "max_iter" in ov:
            changes.update(f_max_iter=ov["max_iter"], eval_f_max_iter=ov["max_iter"])
        for k, v in changes.items():
            saved[k] = getattr(deq, k)
            setattr(deq, k, v)
        if "max_iter" in ov and deq.training:
            # in training mode torchdeq samples the iterate at an index fixed when it was built; a
            # per-call f_max_iter makes it sample at the new budget (its own way of changing it)
            kwargs = dict(kwargs)
            kwargs["solver_kwargs"] = {**(kwargs.get("solver_kwargs") or {}), "f_max_iter": int(ov["max_iter"])}
        self.depth += 1
        try:
            out = original(deq, func, z_init, *args, **kwargs)
        except BaseException as exc:
            call.status = type(exc).__name__
            self.tell(call)
            raise
        finally:
            self.depth -= 1
            for k, v in saved.items():
                setattr(deq, k, v)
        call.seconds = time.perf_counter() - start
        with _bookkeeping(where, "reading its output"):
            info = out[1] if isinstance(out, tuple) and len(out) > 1 else {}
            info = info if isinstance(info, dict) else {}
            nstep = info.get("nstep")
            if isinstance(nstep, torch.Tensor):
                call.nfe = float(nstep.double().mean())
            call.unconverged = deq_unconverged(info, deq.f_stop_mode, changes.get("f_tol", deq.f_tol))
            if call.unconverged is not None:
                call.status = "success" if call.unconverged == 0 else "not converged"
            call.unconverged = call.unconverged or 0
            z_out = out[0][-1] if isinstance(out, tuple) and out[0] else None
            if isinstance(z_out, torch.Tensor):
                call.state_max = float(z_out.detach().abs().max())
                if self.recorder is not None:
                    self.recorder.append((key, func, None, z_out.detach()))
        self.tell(call)
        return out


def deq_unconverged(info: dict, stop_mode: str, tol: float) -> int | None:
    """Samples a torchdeq solve left unconverged, the way torchdeq stops: its lowest residual under
    ``stop_mode`` (``"abs"``: ``|f(z) - z|``, ``"rel"``: that over ``|f(z)|``) not below ``tol``
    (torchdeq stops when it is below). ``None`` when the info holds no residual (torchdeq's
    placeholder is -1)."""
    lowest = info.get(f"{stop_mode}_lowest")
    if not isinstance(lowest, torch.Tensor) or bool((lowest < 0).any()):
        return None
    return int((lowest.reshape(-1) >= tol).sum())


@contextlib.contextmanager
def _bookkeeping(where: str, doing: str):
    """The hook's own work on a call: a failure is the hook's (:class:`HookError`), naming the solve."""
    try:
        yield
    except HookError:
        raise
    except Exception as exc:  # anything the hook's reading of an unexpected call raises is its own failure
        raise HookError(
            f"the audit's hook failed {doing} of the solve {where}: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:200] if str(exc) else ''} (the model and the data are not at fault; "
            "this solve's form is one the audit does not read)"
        ) from exc


def _identity(func) -> tuple:
    """What a solve's function is, stable across forward passes: a module by its parameters (a
    wrapper made per call, as torchcde's, holds the user's field and so its parameters), a function
    by its code (a closure made per call keeps its code), any other callable by its type."""
    if isinstance(func, nn.Module):
        params = tuple(id(p) for p in func.parameters())
        return ("module", type(func).__qualname__, params)
    target = getattr(func, "__func__", func)
    code = getattr(target, "__code__", None)
    if code is not None:
        owner = getattr(func, "__self__", None)
        return ("function", code.co_filename, code.co_firstlineno, code.co_name, id(owner) if owner is not None else 0)
    return ("callable", type(func).__qualname__)


def _settings_signature(kwargs: dict) -> tuple:
    """The settings a solve was called with, as a key: two calls of one line at different tolerances
    are two solves."""
    out = []
    for k in ("rtol", "atol", "method", "step_size", "options", "gradient", "backend"):
        if k in kwargs:
            v = kwargs[k]
            v = sorted((str(a), repr(b)) for a, b in v.items()) if isinstance(v, dict) else repr(v)
            out.append((k, str(v)))
    return tuple(out)


def _site(filename: str, line: int, qualname: str) -> str:
    import os

    return f"{os.path.basename(filename)}:{line} ({qualname})"


def _route(entry: str, kw: dict) -> str:
    if entry == "torchdiffeq.odeint_adjoint":
        return "adjoint"
    if entry == "nodecourse.odeint":
        return kw.get("gradient", "backprop")
    return "backprop"


def _torchdiffeq(route: str):
    if route == "adjoint":
        from torchdiffeq._impl.adjoint import odeint_adjoint

        return odeint_adjoint
    if route == "backprop":
        from torchdiffeq._impl.odeint import odeint

        return odeint
    raise ValueError(f"route={route!r}: a torchdiffeq solve offers 'backprop' and 'adjoint'")


def _deq_route(deq) -> str:
    args = getattr(deq, "args", None)
    get = args.get if args is not None else (lambda k, d=None: d)
    if get("ift", False) or get("hook_ift", False):
        return "implicit (IFT)"
    grad = get("grad", 1)
    return f"phantom gradient ({grad} step{'s' if grad != 1 else ''})"


def _deq_settings(deq) -> dict:
    solver = getattr(deq.f_solver, "__name__", str(deq.f_solver))
    return {
        "method": solver,
        "tol": deq.f_tol,
        "max_iter": deq.f_max_iter,
        "eval_max_iter": deq.eval_f_max_iter,
        "stop_mode": deq.f_stop_mode,
    }


def _ode_wrapper(original, entry: str):
    @functools.wraps(original)
    def wrapper(func, y0, t, *args, **kwargs):
        hook = _ACTIVE
        if hook is None or hook.depth > 0 or args:
            return original(func, y0, t, *args, **kwargs)
        site = _caller()
        if site[0].startswith(LIBRARY_CALLERS):
            return original(func, y0, t, **kwargs)
        if kwargs.get("event_fn") is not None:
            raise _event_refusal(entry, "event_fn=...", site)
        return hook.solve_ode(entry, original, site, func, y0, t, kwargs)

    wrapper.__nodecourse_original__ = original
    return wrapper


def _event_refusal(entry: str, called_with: str, site) -> EventSolveError:
    _, filename, line, qualname = site
    return EventSolveError(
        f"the audit's hook found a solve with events: {entry} at {_site(filename, line, qualname)}, "
        f"called with {called_with}; " + EVENTS_NEED
    )


def _entry_name(fn) -> str:
    """``module.name`` of a solver entry (``torchdiffeq._impl.adjoint.odeint_adjoint``), else its type."""
    name = getattr(fn, "__qualname__", None)
    return f"{getattr(fn, '__module__', '')}.{name}".lstrip(".") if name else type(fn).__name__


def _event_wrapper(original, entry: str):
    """``odeint_event`` (torchdiffeq's or the library's): refused when called from the user's code,
    whatever ``odeint_interface`` it is given (its default is bound at definition, out of reach of
    the entry points' patches)."""

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        hook = _ACTIVE
        if hook is None or hook.depth > 0:
            return original(*args, **kwargs)
        site = _caller()
        if site[0].startswith(LIBRARY_CALLERS):
            return original(*args, **kwargs)
        interface = kwargs.get("odeint_interface")
        bound = getattr(interface, "__nodecourse_original__", interface)
        via = "its default odeint_interface" if interface is None else f"odeint_interface={_entry_name(bound)}"
        raise _event_refusal(entry, f"event_fn=... and {via}", site)

    wrapper.__nodecourse_original__ = original
    return wrapper


#: Event entries by the name of their function in a frame, the outermost named in a refusal.
_EVENT_ENTRIES = (
    ("torchdiffeq", "odeint_event", "torchdiffeq.odeint_event"),
    ("nodecourse.solvers", "odeint_event", "nodecourse.odeint_event"),
    ("torchdiffeq", "odeint_adjoint", "torchdiffeq.odeint_adjoint"),
    ("torchdiffeq", "odeint", "torchdiffeq.odeint"),
    ("nodecourse.solvers", "odeint", "nodecourse.odeint"),
)
# Frames passed over to find the user's call of an event search: the solvers' own (the library's too).
_SEARCH_PASS = PASS_THROUGH + ("nodecourse.solvers",)


def _event_search_wrapper(original):
    """An event search (torchdiffeq's ``integrate_until_event``, the library's ``_solve_event``):
    refused when the audit watches and the user's code (not a library block) started it; the entry
    named is the outermost event entry on the stack."""

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        hook = _ACTIVE
        if hook is None or hook.depth > 0:
            return original(*args, **kwargs)
        frame, names = sys._getframe(1), []
        while frame is not None:
            module = frame.f_globals.get("__name__", "")
            if not (module.startswith(_SEARCH_PASS) or module == "torch" or module == __name__):
                break
            names.append((module, frame.f_code.co_name))
            frame = frame.f_back
        site = ("", "?", 0, "?")
        if frame is not None:
            code = frame.f_code
            site = (module, code.co_filename, frame.f_lineno, getattr(code, "co_qualname", code.co_name))
        if site[0].startswith(LIBRARY_CALLERS):
            return original(*args, **kwargs)
        entry = next(
            (e for lib, fn, e in _EVENT_ENTRIES if any(m.startswith(lib) and n == fn for m, n in names)),
            "an event solve",
        )
        raise _event_refusal(entry, "event_fn=... (found by its event search)", site)

    wrapper.__nodecourse_original__ = original
    return wrapper


def _unsupported_wrapper(original, entry: str):
    """A library the audit cannot measure: its calls are recorded (entry, site) and run unchanged (the
    audit refuses the model by name after the forward pass). A torchsde solve made by torchcde's
    ``cdeint(..., backend="torchsde")`` is recorded as that call (a CDE, not an SDE of the user's)."""

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        hook = _ACTIVE
        if hook is not None and hook.depth == 0:
            via_torchcde = sys._getframe(1).f_globals.get("__name__", "").startswith("torchcde")
            _, filename, line, qualname = _caller()
            hook.unsupported.append((TORCHCDE_SDE_BACKEND if via_torchcde else entry, _site(filename, line, qualname)))
        return original(*args, **kwargs)

    wrapper.__nodecourse_original__ = original
    return wrapper


def _deq_wrapper(original):
    @functools.wraps(original)
    def forward(self, func, z_init, *args, **kwargs):
        hook = _ACTIVE
        if hook is None or hook.depth > 0:
            return original(self, func, z_init, *args, **kwargs)
        return hook.solve_deq(original, self, _caller(), func, z_init, args, kwargs)

    forward.__nodecourse_original__ = original
    return forward


def active() -> "SolveHook | None":
    """The hook installed now, if any."""
    return _ACTIVE


__all__ = ["SolveCall", "SolveHook"]
