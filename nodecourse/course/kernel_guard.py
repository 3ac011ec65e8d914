"""Runs inside the grading kernel: undo what answer code did to the machinery a check relies on.

The grader (:mod:`nodecourse.course.grading`) starts a fresh kernel, calls
:func:`install` before any notebook cell runs, and calls :func:`before_check`
before every check cell and :func:`after_reference_cell` after every cell that
is not an answer. These calls arrive as ``user_expressions`` of an empty
execute request, which IPython evaluates with ``eval`` and no input or AST
transformer, so a transformer registered by answer code cannot rewrite them.

:func:`install` takes copies, before any answer ran, of:

- IPython's hooks that change later cells: input transformers (cleanup, line
  and token), AST transformers, the custom exception handler, the event
  callbacks, and the shell's methods on its classes;
- the functions and classes of the modules a check uses (``builtins``,
  ``math``, ``operator``, ``numpy``, ``torch`` and its ``nn``/``linalg``/
  ``autograd`` parts, ``nodecourse`` library modules, this grader's check
  module), and the methods of their classes (``torch.Tensor``, ``nn.Module``...);
- ``sys.stdout``/``stderr``/``excepthook``/``displayhook``.

:func:`before_check` puts every one of them back, pops any torch function or
dispatch mode left pushed, rebinds ``check``, rebinds the library names that
reference cells bound (``torch``, ``odeint``...) if an answer re-bound them,
and refuses the check (a ``CheckFailed`` raised in the check cell itself) when
answer code created a tensor or array subclass, a number subclass, or a class
overriding comparisons or conversions (``__eq__``, ``__bool__``,
``__float__``, ``__torch_function__``...), since such an object can make a
comparison say True whatever its value.

This cannot sandbox Python: code in the same process can, with enough effort,
rewrite the interpreter itself. What it guarantees is listed in the trust
model (CONTRIBUTING.md); each guard here has a test in tests/test_grading.py.
"""
from __future__ import annotations

import builtins
import gc
import importlib
import math
import operator
import pkgutil
import sys

_STATE: dict | None = None

# Dunders that decide what a comparison, a truth test or a conversion returns.
OVERRIDE_DUNDERS = frozenset((
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__",
    "__float__", "__int__", "__index__", "__complex__", "__abs__", "__sub__", "__rsub__",
    "__torch_function__", "__torch_dispatch__", "__array__",
    "__array_ufunc__", "__array_function__", "__getattribute__",
))
_METACLASS_DUNDERS = ("__instancecheck__", "__subclasscheck__", "__eq__")
# Class attributes put back by the guard: methods and descriptors, not data.
_RESTORABLE = (classmethod, staticmethod, property)

# Modules whose functions and classes a check may call (and answer code could patch).
_GUARDED_MODULE_PREFIXES = (
    "torch", "numpy", "nodecourse", "IPython.core", "ipykernel", "jupyter_client.session",
)
_GUARDED_MODULES = ("builtins", "math", "operator", "sys", "functools", "itertools", "collections")
# Library modules imported up front, so that a check cell importing them later
# gets the copy the snapshot saw (not one patched by answer code first).
_PRELOAD_SKIP = ("nodecourse.course", "nodecourse.lessons", "nodecourse.claims", "nodecourse.widgets",
                 "nodecourse.plotting", "nodecourse.data")
_SYS_ATTRS = ("stdout", "stderr", "excepthook", "displayhook", "settrace", "setprofile")
_SHELL_LISTS = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")
_MANAGER_LISTS = ("cleanup_transforms", "line_transforms", "token_transformers")


def _preload_library() -> None:
    import nodecourse

    for info in pkgutil.walk_packages(nodecourse.__path__, "nodecourse."):
        if info.name.startswith(_PRELOAD_SKIP):
            continue
        try:
            importlib.import_module(info.name)
        except Exception:  # an optional dependency missing: that module is simply not guarded
            pass


def _guarded_modules() -> list:
    mods = []
    for name, mod in list(sys.modules.items()):
        if mod is None:
            continue
        if name in _GUARDED_MODULES or name.startswith(_GUARDED_MODULE_PREFIXES):
            mods.append(mod)
    return mods


def _snapshot_namespace(ns) -> dict:
    return {k: v for k, v in list(ns.items()) if callable(v) or isinstance(v, type(sys))}


def _snapshot_class(cls) -> dict:
    return {k: v for k, v in list(vars(cls).items()) if callable(v) or isinstance(v, _RESTORABLE)}


def _all_classes(roots) -> set:
    seen: set = set()
    stack = list(roots)
    subclasses = type.__subclasses__
    while stack:
        cls = stack.pop()
        if cls in seen:
            continue
        seen.add(cls)
        try:
            stack.extend(subclasses(cls))
        except TypeError:  # ``type`` itself needs an argument
            stack.extend(type.__subclasses__(type))
    return seen


def install(shell) -> str:
    """Take the copies described in the module docstring. Call once, before any notebook cell."""
    global _STATE
    import numpy
    import torch

    import nodecourse.course.checks as checks

    _preload_library()
    config = importlib.import_module("nodecourse.config")
    use_threads = getattr(config, "use_course_threads", None)
    if use_threads is not None:
        use_threads()
    modules = _guarded_modules()
    module_copies = [(m, _snapshot_namespace(vars(m))) for m in modules]
    class_copies = []
    for m in modules:
        for value in list(vars(m).values()):
            if isinstance(value, type) and getattr(value, "__module__", None) == m.__name__:
                class_copies.append((value, _snapshot_class(value)))
    for cls in type(shell).__mro__ + (torch.Tensor, torch._C.TensorBase, torch.nn.Module):
        class_copies.append((cls, _snapshot_class(cls)))
    mgr = shell.input_transformer_manager
    _STATE = {
        "shell": shell,
        "torch": torch,
        "numpy": numpy,
        "checks": checks,
        "check": checks.check,
        "modules": module_copies,
        "classes": class_copies,
        "shell_dict": dict(vars(shell)),
        "shell_lists": {name: list(getattr(shell, name)) for name in _SHELL_LISTS},
        "manager": mgr,
        "manager_lists": {name: list(getattr(mgr, name)) for name in _MANAGER_LISTS if hasattr(mgr, name)},
        "custom": (shell.custom_exceptions, shell.CustomTB),
        "events": {k: list(v) for k, v in shell.events.callbacks.items()},
        "sys": {name: getattr(sys, name) for name in _SYS_ATTRS if hasattr(sys, name)},
        "known_classes": _all_classes([object]),
        "bindings": {},
        "setattr": setattr, "delattr": delattr, "type_setattr": type.__setattr__,
        "isinstance": isinstance, "getattr": getattr, "vars": vars, "list": list, "dict": dict,
    }
    return "installed"


def _restore() -> list[str]:
    """Put back every copy; return what had been changed (for the grader's log)."""
    s = _STATE
    changed: list[str] = []
    shell = s["shell"]
    setattr_, type_setattr = s["setattr"], s["type_setattr"]
    for name, value in s["sys"].items():
        if getattr(sys, name, None) is not value:
            setattr_(sys, name, value)
            changed.append(f"sys.{name}")
    if shell.input_transformer_manager is not s["manager"]:
        shell.input_transformer_manager = s["manager"]
        changed.append("input_transformer_manager")
    for name, items in s["manager_lists"].items():
        current = getattr(s["manager"], name)
        if list(current) != items:
            current[:] = items
            changed.append(f"input_transformer_manager.{name}")
    for name, items in s["shell_lists"].items():
        current = getattr(shell, name)
        if list(current) != items:
            current[:] = items
            changed.append(name)
    if (shell.custom_exceptions, shell.CustomTB) != s["custom"]:
        shell.custom_exceptions, shell.CustomTB = s["custom"]
        changed.append("custom exception handler")
    for event, callbacks in shell.events.callbacks.items():
        saved = s["events"].get(event, [])
        if list(callbacks) != saved:
            callbacks[:] = saved
            changed.append(f"events.{event}")
    for key in list(vars(shell)):
        if key not in s["shell_dict"] and callable(vars(shell)[key]):
            delattr(shell, key)  # an instance attribute hiding a method (shell.run_cell = ...)
            changed.append(f"shell.{key}")
    for key, value in s["shell_dict"].items():
        if callable(value) and vars(shell).get(key) is not value:
            setattr_(shell, key, value)
            changed.append(f"shell.{key}")
    for mod, saved in s["modules"]:
        ns = vars(mod)
        for key, value in saved.items():
            if ns.get(key) is not value:
                ns[key] = value
                changed.append(f"{mod.__name__}.{key}")
    for cls, saved in s["classes"]:
        ns = vars(cls)
        for key, value in saved.items():
            if ns.get(key) is not value:
                try:
                    type_setattr(cls, key, value)
                    changed.append(f"{cls.__qualname__}.{key}")
                except (TypeError, AttributeError):
                    pass
        for key in [k for k in ns if k not in saved and k in OVERRIDE_DUNDERS]:
            try:
                delattr(cls, key)
                changed.append(f"{cls.__qualname__}.{key}")
            except (TypeError, AttributeError):
                pass
    changed += _pop_torch_modes()
    return changed


def _pop_torch_modes() -> list[str]:
    torch = _STATE["torch"]
    popped = []
    while torch._C._len_torch_function_stack() > 0:
        torch._C._pop_torch_function_stack()
        popped.append("torch function mode")
    while torch._C._len_torch_dispatch_stack() > 0:
        torch._C._pop_torch_dispatch_stack()
        popped.append("torch dispatch mode")
    return popped


def _defined_in_importable_module(cls) -> bool:
    """True when ``cls`` is what its module, a real file, names at its qualified name."""
    mod = sys.modules.get(getattr(cls, "__module__", None) or "")
    if mod is None or not getattr(mod, "__file__", None):
        return False
    obj = mod
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return obj is cls


def _dataclass_eq(cls, name) -> bool:
    fn = vars(cls).get(name)
    return (name in ("__eq__", "__hash__") and "__dataclass_fields__" in vars(cls)
            and getattr(getattr(fn, "__code__", None), "co_filename", "") == "<string>")


def suspicious_classes() -> list[str]:
    """Classes created after :func:`install` by notebook code that can forge a comparison."""
    s = _STATE
    torch, numpy = s["torch"], s["numpy"]
    forgeable_bases = (torch.Tensor, numpy.ndarray, numpy.generic, int, float, complex, str, bytes)
    known = s["known_classes"]
    found = []
    for cls in _all_classes([object]) - known:
        if _defined_in_importable_module(cls) and not cls.__module__.startswith("__main__"):
            continue  # a library class imported (or created) since: not the notebook's
        overrides = sorted(n for n in OVERRIDE_DUNDERS if n in vars(cls) and not _dataclass_eq(cls, n))
        meta = type(cls)
        new_meta = meta not in known and any(n in vars(meta) for n in _METACLASS_DUNDERS)
        if issubclass(cls, forgeable_bases) or overrides or new_meta:
            what = ", ".join(overrides) if overrides else (
                f"metaclass {meta.__qualname__}" if new_meta else f"a subclass of {cls.__mro__[1].__name__}")
            found.append(f"{cls.__qualname__} ({what})")
    return sorted(found)


def after_reference_cell() -> str:
    """Remember the library names a reference (non-answer) cell bound in the notebook's namespace."""
    ns = _STATE["shell"].user_ns
    for key, value in list(ns.items()):
        if key.startswith("_"):
            continue
        module = getattr(value, "__module__", None) if not isinstance(value, type(sys)) else value.__name__
        if isinstance(module, str) and module.split(".")[0] in ("torch", "numpy", "nodecourse", "math"):
            _STATE["bindings"][key] = value
    return "noted"


def before_check(check_id: str) -> str:
    """Undo answer code's changes; return '' when the check may run, else why it may not.

    When it may not, ``check`` in the namespace is bound to a function that
    raises ``CheckFailed`` with that reason, so the check cell fails whatever it computes.
    """
    s = _STATE
    changed = _restore()
    ns = s["shell"].user_ns
    for key, value in s["bindings"].items():
        if ns.get(key) is not value:
            ns[key] = value
            changed.append(f"name {key!r}")
    forged = suspicious_classes()
    checks = s["checks"]
    checks._refuse(forged and f"answer code defined {', '.join(forged)}, which can make a comparison "
                              "pass whatever the value; checks refuse to run with it")
    ns["check"] = s["check"]
    return "; ".join(["restored " + ", ".join(changed)] if changed else []) + \
        ("; refused: " + ", ".join(forged) if forged else "")
