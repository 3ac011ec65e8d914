"""Runs inside the grading kernel: undo what answer code did to the machinery a check relies on.

Only for check cells that still run in the learner's kernel (an exercise not
converted to task specs, :mod:`nodecourse.course.tasks`): the grader installs
this guard only when such a cell exists. Converted checks are decided outside
the kernel and need none of it.

The grader (:mod:`nodecourse.course.grading`) starts a fresh kernel, calls
:func:`install` before any notebook cell runs, :func:`before_check` before and
:func:`after_check` after every check cell, and :func:`after_reference_cell`
after every cell that is not an answer. These calls arrive as ``user_expressions`` of an empty
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

:func:`after_check` catches what the learner's functions do *while* the check
calls them (patch a library function or ``checks``, rewrite a function's
``__code__``, push a torch mode, define a forging class inside the function):
the grader fails that check.

This cannot sandbox Python: code in the same process can, with enough effort,
rewrite the interpreter itself. What it guarantees is listed in the trust
model (CONTRIBUTING.md); each guard here has a test in tests/test_grading.py.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types

_STATE: dict | None = None

# Dunders that decide what a comparison, a truth test or a conversion returns.
OVERRIDE_DUNDERS = frozenset(
    (
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__bool__",
        "__float__",
        "__int__",
        "__index__",
        "__complex__",
        "__abs__",
        "__sub__",
        "__rsub__",
        "__torch_function__",
        "__torch_dispatch__",
        "__array__",
        "__array_ufunc__",
        "__array_function__",
        "__getattribute__",
    )
)
_METACLASS_DUNDERS = ("__instancecheck__", "__subclasscheck__", "__eq__")
# Class attributes put back by the guard: methods and descriptors, not data.
_RESTORABLE = (classmethod, staticmethod, property)

# Modules whose functions and classes a check calls (and answer code could patch):
# these exactly, and every nodecourse library module. Not all of torch: torch
# patches some of its own classes at run time (an optimiser's ``step`` on first
# use), which is not tampering.
_GUARDED_MODULES = (
    "builtins",
    "math",
    "operator",
    "sys",
    "numpy",
    "numpy.linalg",
    "torch",
    "torch.linalg",
    "torch.nn.functional",
    "torch.functional",
    "torch.autograd",
    "torch.testing",
    "IPython.core.interactiveshell",
    "ipykernel.zmqshell",
    "ipykernel.ipkernel",
    "ipykernel.kernelbase",
    "ipykernel.iostream",
    "jupyter_client.session",
)
_GUARDED_MODULE_PREFIXES = ("nodecourse.",)
# Changes torch makes to itself (importing torch._dynamo wraps torch.manual_seed).
_SELF_PATCHES = frozenset(("torch.manual_seed",))
# Library modules imported up front, so that a check cell importing them later
# gets the copy the snapshot saw (not one patched by answer code first).
_PRELOAD_SKIP = (
    "nodecourse.course",
    "nodecourse.lessons",
    "nodecourse.claims",
    "nodecourse.widgets",
    "nodecourse.plotting",
)
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
        if name in _GUARDED_MODULES or name == "nodecourse" or name.startswith(_GUARDED_MODULE_PREFIXES):
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
    for cls in type(shell).__mro__ + (torch.Tensor, torch._C.TensorBase, torch.nn.Module, torch.nn.Parameter):
        class_copies.append((cls, _snapshot_class(cls)))
    # The code of every Python function there: ``f.__code__ = ...`` keeps f's identity.
    functions = {}
    for _, saved in module_copies + class_copies:
        for value in saved.values():
            fn = getattr(value, "__func__", value)  # classmethod / staticmethod
            if isinstance(fn, types.FunctionType):
                functions[id(fn)] = (fn, fn.__code__, fn.__defaults__, fn.__kwdefaults__)
    mgr = shell.input_transformer_manager
    _STATE = {
        "shell": shell,
        "torch": torch,
        "numpy": numpy,
        "checks": checks,
        "check": checks.check,
        "modules": module_copies,
        "classes": class_copies,
        "functions": list(functions.values()),
        "shell_dict": dict(vars(shell)),
        "shell_lists": {name: list(getattr(shell, name)) for name in _SHELL_LISTS},
        "manager": mgr,
        "manager_lists": {name: list(getattr(mgr, name)) for name in _MANAGER_LISTS if hasattr(mgr, name)},
        "custom": (shell.custom_exceptions, shell.CustomTB),
        "events": {k: list(v) for k, v in shell.events.callbacks.items()},
        "sys": {name: getattr(sys, name) for name in _SYS_ATTRS if hasattr(sys, name)},
        "known_classes": _all_classes([object]),
        "trusted_dirs": _trusted_dirs(),
        "bindings": {},
        "setattr": setattr,
        "type_setattr": type.__setattr__,
    }
    return "installed"


def _restore() -> tuple[list[str], list[str]]:
    """Put back every copy; return what had been changed: (IPython and sys hooks, library).

    Hooks can change legitimately (importing matplotlib registers an event
    callback); the library (module functions, class methods, function code,
    torch modes) does not, outside answer code written to forge a check.
    """
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
    hooks, changed = changed, []
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
    for fn, code, defaults, kwdefaults in s["functions"]:
        if fn.__code__ is not code or fn.__defaults__ is not defaults or fn.__kwdefaults__ is not kwdefaults:
            fn.__code__, fn.__defaults__, fn.__kwdefaults__ = code, defaults, kwdefaults
            changed.append(f"{fn.__module__}.{fn.__qualname__}.__code__")
    changed += _pop_torch_modes()
    return hooks, changed


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


def _trusted_dirs() -> tuple[str, ...]:
    import os
    import sysconfig

    import nodecourse

    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("purelib", "platlib", "stdlib", "platstdlib")}
    dirs.add(os.path.dirname(os.path.abspath(nodecourse.__file__)))
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


def _from_installed_code(cls) -> bool:
    """True when ``cls`` comes from an installed module file, not from the notebook.

    Its module must be a real file under site-packages, the standard library or
    the nodecourse package (``__main__`` never is), and so must the code of every
    Python function in the class's own namespace (a method written in a cell
    has the cell's file name).
    """
    import os

    trusted = _STATE["trusted_dirs"]
    module = getattr(cls, "__module__", None) or ""
    mod = sys.modules.get(module)
    if module == "__main__" or mod is None or not getattr(mod, "__file__", None):
        return False
    if not os.path.realpath(mod.__file__).startswith(trusted):
        return False
    for value in list(vars(cls).values()):
        fn = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
        if isinstance(fn, types.FunctionType):
            name = fn.__code__.co_filename
            if not name.startswith("<") and not os.path.realpath(name).startswith(trusted):
                return False  # "<string>": dataclasses and namedtuple make methods with exec
    return True


def _dataclass_eq(cls, name) -> bool:
    fn = vars(cls).get(name)
    return (
        name in ("__eq__", "__hash__")
        and "__dataclass_fields__" in vars(cls)
        and getattr(getattr(fn, "__code__", None), "co_filename", "") == "<string>"
    )


_NATIVE = (
    types.WrapperDescriptorType,
    types.MethodDescriptorType,
    types.BuiltinFunctionType,
    types.MethodWrapperType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    types.ClassMethodDescriptorType,
)


def _overrides(cls, names) -> list[str]:
    """The dunders among ``names`` that ``cls`` itself defines with code that is not C
    (a C slot inherits real behaviour; a Python function or any other object can say anything)."""
    found = []
    for name in names:
        value = vars(cls).get(name)
        if value is None or isinstance(value, _NATIVE) or _dataclass_eq(cls, name):
            continue
        found.append(name)
    return sorted(found)


def suspicious_classes() -> list[str]:
    """Classes created after :func:`install` by notebook code that can forge a comparison.

    New classes (not there when the guard was installed), not from installed code
    (see :func:`_from_installed_code`), that define comparison, truth, conversion
    or torch/numpy dispatch dunders in their own namespace (or whose new
    metaclass defines ``__instancecheck__``/``__subclasscheck__``/``__eq__``).
    """
    s = _STATE
    known = s["known_classes"]
    found = []
    for cls in _all_classes([object]) - known:
        if _from_installed_code(cls):
            continue  # a library class imported (or created) since: not the notebook's
        overrides = _overrides(cls, OVERRIDE_DUNDERS)
        meta = type(cls)
        meta_overrides = _overrides(meta, _METACLASS_DUNDERS) if meta not in known else []
        if overrides or meta_overrides:
            what = ", ".join(overrides) if overrides else f"metaclass {meta.__qualname__}"
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
    """Undo answer code's changes before check ``check_id``; return what was undone.

    When answer code defined a class that can forge a comparison, ``check`` is
    told to refuse (it raises ``CheckFailed`` with the reason), so the check
    cell fails whatever it computes.
    """
    s = _STATE
    hooks, library = _restore()
    ns = s["shell"].user_ns
    for key, value in s["bindings"].items():
        if ns.get(key) is not value:
            ns[key] = value
            hooks.append(f"name {key!r}")
    forged = suspicious_classes()
    s["checks"]._refuse(
        forged
        and f"checks refuse to run: answer code defined {', '.join(forged)}, which can "
        "make a comparison pass whatever the value"
    )
    ns["check"] = s["check"]
    changed = hooks + library
    return ("restored " + ", ".join(changed)) if changed else ""


def after_check(check_id: str) -> str:
    """After check ``check_id`` ran: '' when nothing it relies on changed while it ran, else what did.

    The check cell calls the learner's functions; one that patches the library,
    rewrites a function's code, pushes a torch mode or defines a forging class
    *while the check runs* is not undone by :func:`before_check`. The grader
    fails the check on any such change (and the copies are put back here).
    """
    _, library = _restore()
    library = sorted(set(library) - _SELF_PATCHES)
    forged = suspicious_classes()
    problems = []
    if library:
        problems.append("changed " + ", ".join(library[:6]))
    if forged:
        problems.append("defined " + ", ".join(forged))
    return "; ".join(problems)
