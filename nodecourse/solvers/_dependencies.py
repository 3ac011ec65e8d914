"""What a field depends on, for the gradient routes that keep no graph (checkpoint, adjoint, reversible).

Those routes differentiate ``func`` again in their backward pass, one step (or one evaluation) at a
time, so they must know every tensor requiring grad that ``func`` uses, before the solve:

- :func:`find_dependencies` looks where a field can hold a tensor: a function's closure cells,
  ``__defaults__`` and ``__kwdefaults__``, the globals its code (and its nested lambdas' code) names,
  ``functools.partial`` arguments, a bound method's ``__self__``, an ``nn.Module``'s parameters,
  buffers and plain tensor attributes (every submodule's), a callable object's attributes, and the
  lists, tuples and dicts among those, a few levels deep. A tensor used only late in the solve
  (``-q * y if t > 0.5``) is found there although the probe call at ``(t0, y0)`` never reaches it.
  One probing call then walks the graph of ``func(t0, y0)`` for anything else (a leaf reached some
  other way). The parameters of an ``nn.Module`` the field reaches (not ``func`` itself: a global
  ``model`` whose ``dynamics`` it calls) that the probe does not reach come last
  (:attr:`Dependencies.late`): they are differentiated too, so one used only later in the solve gets
  its gradient, and one never used gets None, as with backprop; the adjoint leaves their channels out
  of its default error norm, so an encoder beside the dynamics neither dilutes nor steers it.
- A closed-over tensor that is not a leaf (``q = p * p``, ``A = B - B.T``, ``torch.matrix_exp(B)``)
  carries a graph built before the solve. The routes make it an input of their autograd Function
  and, whenever they call ``func`` with a graph, put a stand-in in its place (:meth:`Dependencies.live`):
  a detached leaf, so each per-step vector-Jacobian product stops at it (the graph behind ``q`` is
  walked once, by autograd, after the Function returns ``dL/dq``: no "backward through the graph a
  second time", hooks and ``retain_grad`` on ``q`` see the total once, and
  ``torch.autograd.grad(L, q)`` works).
- A graph built before the solve that the probe reaches but that sits nowhere the search can put a
  stand-in (a tuple, a ``parametrize.cached()`` weight, an object deeper than the search goes) is
  refused by name before the solve (:class:`HiddenGraphError`), with the fix.

Cost: the search visits at most :data:`MAX_VISITS` objects (microseconds for a closure); the
probe is the one evaluation the routes made before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import types
from typing import Any, cast

import torch
from torch import nn
from torch.nn.utils import parametrize

#: The search gives up after this many objects (a field closing over a big list of tensors).
MAX_VISITS = 2000
#: How many containers / objects deep the search goes from the field.
MAX_DEPTH = 4


class HiddenGraphError(ValueError):
    """``func`` uses a tensor carrying a graph built before the solve that the no-graph gradient routes
    cannot find where the field holds it, so they cannot differentiate through it correctly."""


# ----------------------------------------------------------------------------------------------
# Where a tensor sits: a slot the routes can swap a stand-in into


@dataclasses.dataclass(frozen=True)
class Slot:
    """One place a field holds a tensor: ``kind`` is ``"cell"`` (a closure cell), ``"item"`` (a
    list or dict entry, a globals entry), ``"attr"`` (an object's ``__dict__`` entry) or
    ``"default"`` (entry ``key`` of a function's ``__defaults__``)."""

    kind: str
    holder: Any
    key: Any = None

    def get(self):
        if self.kind == "cell":
            return self.holder.cell_contents
        if self.kind == "default":
            return self.holder.__defaults__[self.key]
        if self.kind == "attr":
            return self.holder.__dict__[self.key]
        return self.holder[self.key]

    def set(self, value) -> None:
        if self.kind == "cell":
            self.holder.cell_contents = value
        elif self.kind == "default":
            defaults = list(self.holder.__defaults__)
            defaults[self.key] = value
            self.holder.__defaults__ = tuple(defaults)
        elif self.kind == "attr":
            self.holder.__dict__[self.key] = value
        else:
            self.holder[self.key] = value


_ATOMS = (str, bytes, int, float, complex, bool, type(None))


class _Search:
    """The walk of :func:`closed_over`: ``found`` maps ``id(tensor)`` to ``(tensor, [slots])``; a slot
    of None marks a place no stand-in can go (a tuple entry, a parameter)."""

    def __init__(self, wanted=lambda x: x.requires_grad):
        self.wanted = wanted
        self.found: dict[int, tuple[torch.Tensor, list]] = {}
        self.parameters: set[int] = set()  # ids of the nn.Parameters found inside modules
        self.cached_parametrization = False  # a parametrised module met inside parametrize.cached()
        self.seen: set[int] = set()
        self.visits = 0

    def tensor(self, x: torch.Tensor, slot: Slot | None) -> None:
        if not self.wanted(x):
            return
        entry = self.found.setdefault(id(x), (x, []))
        entry[1].append(slot)

    def visit(self, obj, slot: Slot | None, depth: int) -> None:
        if isinstance(obj, torch.Tensor):
            self.tensor(obj, slot)
            return
        if depth > MAX_DEPTH or self.visits >= MAX_VISITS or id(obj) in self.seen:
            return
        if obj is None or isinstance(obj, _ATOMS) or isinstance(obj, (type, types.ModuleType)):
            return
        self.seen.add(id(obj))
        self.visits += 1
        if isinstance(obj, nn.Module):
            self.module(obj, depth)
        elif isinstance(obj, types.MethodType):
            owner = obj.__self__
            if not callable(owner) and hasattr(owner, "__dict__") and not isinstance(owner, (type, types.ModuleType)):
                # a method of a plain object (an SDE's f, a field's method): the object's attributes
                if id(owner) not in self.seen:
                    self.seen.add(id(owner))
                    self.attributes(owner, depth + 1)
            else:
                self.visit(owner, None, depth + 1)
            self.visit(obj.__func__, None, depth)
        elif isinstance(obj, types.FunctionType):
            self.function(obj, depth)
        elif isinstance(obj, functools.partial):
            self.visit(obj.func, None, depth + 1)
            for item in obj.args:
                self.visit(item, None, depth + 1)
            for key, item in obj.keywords.items():
                self.visit(item, Slot("item", obj.keywords, key), depth + 1)
        elif isinstance(obj, list):
            for k, item in enumerate(obj[:MAX_VISITS]):
                self.visit(item, Slot("item", obj, k), depth + 1)
        elif isinstance(obj, tuple):
            for item in obj[:MAX_VISITS]:
                self.visit(item, None, depth + 1)
        elif isinstance(obj, dict):
            for key, item in list(obj.items())[:MAX_VISITS]:
                self.visit(item, Slot("item", obj, key), depth + 1)
        elif callable(obj) and hasattr(obj, "__dict__"):  # a callable object: its attributes and its __call__
            self.attributes(obj, depth)
            self.visit(type(obj).__call__, None, depth + 1)

    def attributes(self, obj, depth: int) -> None:
        for key, item in list(vars(obj).items()):
            self.visit(item, Slot("attr", obj, key), depth + 1)

    def module(self, module: nn.Module, depth: int) -> None:
        for sub in module.modules():
            if parametrize._cache_enabled and parametrize.is_parametrized(sub):
                self.cached_parametrization = True
            for p in sub._parameters.values():
                if p is not None:
                    self.tensor(p, None)  # a leaf: it needs no stand-in
                    self.parameters.add(id(p))
            for key, b in sub._buffers.items():
                if b is not None:
                    self.tensor(b, Slot("item", sub._buffers, key))
            for key, item in vars(sub).items():
                # plain attributes (not the module's own bookkeeping), numbers and strings skipped cheaply
                if key[0] != "_" and not isinstance(item, _ATOMS):
                    self.visit(item, Slot("attr", sub, key), depth + 1)
            forward = getattr(type(sub), "forward", None)
            # torch's own layers (Linear, Sequential, ...) read no globals of the user's: skip their modules
            if isinstance(forward, types.FunctionType) and not forward.__module__.startswith("torch."):
                self.globals_of(forward, depth)

    def function(self, fn: types.FunctionType, depth: int) -> None:
        wrapped = getattr(fn, "__wrapped__", None)
        if wrapped is not None:
            self.visit(wrapped, None, depth + 1)
        code = fn.__code__
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            try:
                contents = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            self.visit(contents, Slot("cell", cell), depth + 1)
        for k, item in enumerate(fn.__defaults__ or ()):
            self.visit(item, Slot("default", fn, k), depth + 1)
        for key, item in (fn.__kwdefaults__ or {}).items():
            self.visit(item, Slot("item", fn.__kwdefaults__, key), depth + 1)
        self.globals_of(fn, depth)

    def globals_of(self, fn: types.FunctionType, depth: int) -> None:
        """The globals ``fn``'s code names (and the code of the lambdas and functions defined in it)."""
        module_globals = fn.__globals__
        codes, names = [fn.__code__], set[str]()
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
        for name in sorted(names):
            if name in module_globals:
                self.visit(module_globals[name], Slot("item", module_globals, name), depth + 1)


def closed_over(
    func, *, module_parameters: bool = True, route: str = "", search: _Search | None = None
) -> list[tuple[torch.Tensor, list]]:
    """``[(tensor, slots)]``: every tensor requiring grad the search finds from ``func`` (see the
    module docstring), in the order found, with the places it sits (None: no stand-in can go there).
    ``module_parameters=False`` leaves out the parameters of the modules found (see
    :func:`find_dependencies`). With ``route``: a parametrised module met inside
    ``torch.nn.utils.parametrize.cached()`` raises :class:`HiddenGraphError` (its cached weight is
    built by the first evaluation and reused by every later one, a graph no stand-in can replace).
    ``search``: the walk to use (its ``parameters`` then tell the module parameters apart)."""
    search = search if search is not None else _Search()
    search.visit(func, None, 0)
    if route and search.cached_parametrization:
        raise HiddenGraphError(
            f"{route} inside torch.nn.utils.parametrize.cached(): the field's parametrised weight is computed "
            f"once, with a graph, and reused by every evaluation, so the replayed evaluations would walk that "
            f"graph again and again. Run the solve outside parametrize.cached() (each evaluation then computes "
            f"the weight afresh from its parameters), or use gradient='backprop'"
        )
    return [entry for key, entry in search.found.items() if module_parameters or key not in search.parameters]


def all_tensors(func) -> list[torch.Tensor]:
    """Every tensor the search of :func:`closed_over` finds from ``func``, requiring grad or not."""
    search = _Search(wanted=lambda x: True)
    search.visit(func, None, 0)
    return [x for x, _ in search.found.values()]


# ----------------------------------------------------------------------------------------------
# Stand-ins


_cutting = [0]


class _Boundary(torch.autograd.Function):
    """``q -> copy of q``: the stand-in of a non-leaf ``q`` for a differentiable (second-order)
    replay. The replay's own ``autograd.grad`` runs with the cut on (:func:`cut`): nothing flows
    back past the stand-in into the graph that built ``q`` (the route returns ``dL/dq`` and autograd
    carries it on once); the graph of the returned gradient, differentiated later with the cut off,
    does reach ``q`` (a Hessian with respect to ``q``)."""

    @staticmethod
    def forward(ctx, q):
        return q.clone()

    @staticmethod
    def backward(ctx, grad):
        return None if _cutting[0] else grad


@contextlib.contextmanager
def cut():
    """While on, gradients stop at the stand-ins of :class:`_Boundary`."""
    _cutting[0] += 1
    try:
        yield
    finally:
        _cutting[0] -= 1


@dataclasses.dataclass
class Dependencies:
    """The tensors to differentiate, ``params`` (the autograd Function's inputs after ``t`` and ``y0``),
    and for the non-leaf ones the places a stand-in goes: ``slots[k]`` for ``params[k]``."""

    params: list
    slots: dict = dataclasses.field(default_factory=dict)
    #: how many of ``params`` (the last ones) are parameters of a module the field reaches that the probe
    #: did not reach: used only later in the solve, or (usually) never (an encoder beside the dynamics)
    late: int = 0

    @contextlib.contextmanager
    def live(self, params, *, create: bool = False):
        """Run ``func`` on stand-ins for the non-leaf parameters; yields the tensors to differentiate
        (``params`` with each non-leaf replaced by its stand-in). ``params``: the Function's saved
        inputs, in :attr:`params`' order. ``create``: a differentiable replay (stand-ins that keep
        the way back to ``q``; run the ``autograd.grad`` inside :func:`cut`)."""
        if not self.slots:
            yield list(params)
            return
        stand = list(params)
        for k in self.slots:
            stand[k] = _Boundary.apply(params[k]) if create else params[k].detach().requires_grad_(True)
        with standing_in({k: stand[k] for k in self.slots}, self.slots):
            yield stand


@contextlib.contextmanager
def standing_in(values: dict, slots: dict):
    """Put ``values[k]`` in every slot of ``slots[k]``; restore what was there afterwards."""
    saved = []
    try:
        for k, value in values.items():
            for slot in slots[k]:
                saved.append((slot, slot.get()))
                slot.set(value)
        yield
    finally:
        for slot, old in reversed(saved):
            slot.set(old)


# ----------------------------------------------------------------------------------------------
# Finding them


def _marker() -> int:
    """The sequence number the next autograd node made on this thread gets (nodes made before the
    probe call have smaller ones: a graph built before the solve)."""
    with torch.enable_grad():
        # an op on a tensor requiring grad, with grad enabled: it has a grad_fn
        node = cast(torch.autograd.graph.Node, (torch.zeros((), requires_grad=True) * 1).grad_fn)
        return node._sequence_nr()


def _walk(out: torch.Tensor, start: int):
    """``(leaves, old)``: the leaf tensors requiring grad that ``out``'s graph reaches, and whether
    it reaches a node made before sequence number ``start`` (a graph built before the call)."""
    leaves, seen, stack, old = [], set(), [out.grad_fn], False
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)  # AccumulateGrad nodes hold their leaf
        if isinstance(variable, torch.Tensor):
            leaves.append(variable)
            continue
        if node._sequence_nr() < start:
            old = True
            continue
        stack.extend(fn for fn, _ in node.next_functions)
    return leaves, old


def _hidden_graph_error(route: str) -> HiddenGraphError:
    return HiddenGraphError(
        f"{route}: func uses a tensor that carries a graph built before the solve (e.g. q = p * p, "
        f"A = B - B.T, a cached parametrisation) but that sits where the solver cannot stand in for it (a "
        f"tuple, functools.partial's positional arguments, parametrize.cached(), or deeper than "
        f"{MAX_DEPTH} levels), so the replayed steps would walk that graph again and again. Fix: hold it in a "
        f"closure variable, a list or dict, or an attribute of func's nn.Module (where the solver finds "
        f"it), compute it inside func, or use gradient='backprop'"
    )


def find_dependencies(func, probe, extra=(), *, route: str) -> tuple[Dependencies, Any]:
    """``(dependencies, out)``: what a no-graph route must differentiate, and ``probe()``'s output.

    ``probe(func)`` evaluates the field once with a graph (``func(t0, y0)`` on a detached copy of
    ``y0``); it runs with stand-ins for the non-leaf tensors found. The parameters are: an
    ``nn.Module``'s trainable parameters, then ``extra`` (``adjoint_options["params"]``), then
    every other tensor requiring grad that the search (:func:`closed_over`) or the probe's graph
    finds, then (:attr:`Dependencies.late`) the parameters of the modules the search reached that the
    probe did not. Raises :class:`HiddenGraphError` (naming ``route``) when the probe reaches a graph built
    before it that is not behind a tensor the search found where a stand-in can go.
    """
    params: list[torch.Tensor] = []
    if isinstance(func, nn.Module):
        params = [p for p in func.parameters() if p.requires_grad]
    for p in extra:
        if not isinstance(p, torch.Tensor) or not p.requires_grad:
            raise TypeError(f"adjoint_options['params'] must hold tensors that require grad; got {type(p).__name__}")
        if all(p is not q for q in params):
            params.append(p)
    # the parameters of a module the field reaches (a global `model`, a closed-over network) count only
    # where the probe reaches them: a whole model (encoder, decoder) would otherwise join the adjoint's
    # augmented state and dilute its error norm; func's own parameters are in `params` already
    search = _Search()
    found = closed_over(func, module_parameters=False, route=route, search=search) if torch.is_grad_enabled() else []
    where = {id(x): slots for x, slots in found}
    for x, _ in found:
        if all(x is not q for q in params):
            params.append(x)
    slots = {}
    for k, p in enumerate(params):
        if p.grad_fn is None:
            continue
        places = where.get(id(p), [])
        if not places or any(s is None for s in places):
            raise _hidden_graph_error(route)
        slots[k] = places
    deps = Dependencies(params, slots)
    if not torch.is_grad_enabled():
        return deps, None
    start = _marker()
    with deps.live(params) as stand:
        out = probe(func)
    if isinstance(out, torch.Tensor) and out.requires_grad:
        leaves, old = _walk(out, start)
        if old:
            raise _hidden_graph_error(route)
        known = {id(p) for p in params} | {id(s) for s in stand}
        for q in leaves:
            if id(q) not in known and q.grad_fn is None:
                params.append(q)
                known.add(id(q))
    else:
        known = {id(p) for p in params}
    # the module parameters the probe did not reach, last: a module used only later in the solve
    late = [x for key, (x, _) in search.found.items() if key in search.parameters and key not in known]
    params.extend(late)
    deps.late = len(late)
    return deps, out
