"""The only grading code that runs in the learner's kernel: call the learner's function, send back plain data.

The grader builds, in its own process, the inputs of one task (from a seed the
kernel never sees) and pickles :func:`answer` together with the task's ``run``
function and those inputs (:func:`request`, with ``cloudpickle`` by value: the
kernel's sandbox has no ``nodecourse/course/tasks`` to import them from). The
kernel unpickles it, calls it on its own namespace, and returns JSON text.

What this gives: nothing that decides a verdict (references, judges, the seed,
the grader's measurements) is in the kernel, so rewriting anything there,
:func:`answer` included, changes only the value sent back, which the grader
judges against a reference it computed elsewhere. Pickled data flows from the
grader into the kernel only; what comes back is read as JSON text, never
unpickled.
"""

from __future__ import annotations

import base64
import functools

from nodecourse.course.tasks.plain import NotPlain, dumps

REFUSAL = "this task asks you to write it ({name} is the library's own answer to it; use your own code)"


def disabled(names, *, scan: bool = True):
    """Make each ``module:function`` of ``names`` raise while the task runs; returns the undo list
    of ``(function, its code)`` pairs, each function once.

    The function object itself is changed (its code swapped), so a name the learner bound to it
    earlier (``from nodecourse import odeint``), a ``functools.partial`` of it or a closure that
    calls it raises too. It is found by its code (the library file and qualified name), not only by
    the module attribute, so an attribute the learner replaced with a wrapper does not hide it, and
    a copy made from its code object raises as well. ``scan=False`` disables only the functions the
    listed attributes lead to, without that search over every live object: the calibration replays
    a trusted solution on thousands of seeds in one large process, where the search costs seconds
    each time (the grader's kernel and the notebook's self-check always search)."""
    import gc
    import importlib
    import types

    wanted: dict[tuple[str, str], str] = {}  # (source file, qualified name) -> the name as listed
    found: dict[int, tuple[object, str]] = {}
    for name in names:
        module, _, qualname = name.partition(":")
        try:
            obj = importlib.import_module(module)
        except ImportError:
            continue  # not in this environment: nothing to disable
        source = getattr(obj, "__file__", None)
        if source:
            wanted.setdefault((source, qualname), name)
        for part in qualname.split("."):  # a re-export ("nodecourse.solvers:odeint"): where it is defined
            obj = getattr(obj, part, None)
        function = _unwrapped(obj)
        code = getattr(function, "__code__", None)
        if code is not None:
            wanted.setdefault((code.co_filename, code.co_qualname), name)
            if type(function) is types.FunctionType:
                found.setdefault(id(function), (function, name))
    for obj in gc.get_objects() if scan else ():
        if type(obj) is not types.FunctionType:  # not isinstance: no lazy module's __class__ is touched
            continue
        code = obj.__code__
        key = (getattr(code, "co_filename", None), getattr(code, "co_qualname", None))
        if key in wanted:
            found.setdefault(id(obj), (obj, wanted[key]))
    undo = []
    for fn, name in found.values():
        code = fn.__code__
        refusal = _refusal_code(REFUSAL.format(name=name), code.co_freevars)
        if refusal is None:
            continue
        fn.__code__ = refusal
        undo.append((fn, code))
    return undo


def _unwrapped(obj, depth: int = 0):
    """The function under a bound method, a ``functools.partial`` or a ``functools.wraps`` wrapper."""
    for attr in ("__func__", "func", "__wrapped__"):
        inner = getattr(obj, attr, None) if depth < 8 else None
        if inner is not None and inner is not obj:
            return _unwrapped(inner, depth + 1)
    return obj


def _refusal_code(message: str, freevars: tuple[str, ...]):
    """The code of a function that raises ``RuntimeError(message)``, with the same free variables as
    the code it replaces (a function's closure must fit its code); None when they cannot be matched."""
    lines = ["def _outer():", *[f"    {v} = None" for v in freevars], "    def _refused(*args, **kwargs):"]
    if freevars:
        lines.append("        (" + ", ".join(freevars) + ",)")
    lines += [f"        raise RuntimeError({message!r})", "    return _refused"]
    scope: dict = {}
    exec("\n".join(lines) + "\n", scope)  # noqa: S102 - our own text, from names a code object holds
    code = scope["_outer"]().__code__
    return code if code.co_freevars == tuple(freevars) else None


def put_back(undo, refusals) -> list[str]:
    """Restore what :func:`disabled` changed; returns the ``module:function`` names whose refusal
    (``refusals``, the codes it put in, in the same order) had been replaced while the task ran:
    an answer that put the library's own code back."""
    restored = []
    for (fn, code), refusal in zip(undo, refusals):
        if fn.__code__ is not refusal:
            restored.append(f"{fn.__module__}:{fn.__qualname__}")
        fn.__code__ = code
    return restored


def answer(run, inputs, library_answers, namespace, *, scan: bool = True) -> str:
    """``run(namespace, inputs)`` as JSON text: ``{"ok": true, "value": ...}`` or
    ``{"ok": false, "type": ..., "message": ...}`` (the grader adds the likely cause). ``scan``: as in
    :func:`disabled`."""
    undo = disabled(library_answers, scan=scan)
    refusals = [fn.__code__ for fn, _ in undo]
    restored: list[str] = []
    try:
        value = run(namespace, inputs)
        text = dumps({"ok": True, "value": value})
    except BaseException as exc:  # the learner's code: any exception is its answer
        text = failure_text(exc)
    finally:
        restored = put_back(undo, refusals)
    if restored:  # the library's answer ran: the value is not the learner's work
        message = REFUSAL.format(name=restored[0]) + "; its code was put back while the task ran"
        return dumps({"ok": False, "type": "RuntimeError", "message": message})
    return text


def failure_text(exc: BaseException) -> str:
    """The reply for an answer that raised ``exc`` (or returned what :func:`dumps` refuses): JSON text
    ``{"ok": false, "type": ..., "message": <its first line>}``; the notebook's self-check sends the same."""
    if isinstance(exc, NotPlain):
        return dumps({"ok": False, "type": "NotPlain", "message": f"the answer is {exc}"})
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return dumps({"ok": False, "type": type(exc).__name__, "message": message[:500]})


def settle(namespace, inputs) -> None:
    """Before a measurement from outside: free what can be freed and hand it back to the system, so
    the peak the grader reads next is this run's (the library's own preparation for RSS peaks)."""
    import gc

    from nodecourse.measure import _memory as memory  # its private preparation for RSS peaks

    gc.collect()
    memory._prepare_malloc()
    memory._release_free_memory()


def measuring(measure, key):
    """``run`` for one measurement of an observed task: ``measure(namespace, inputs, key)``."""
    return functools.partial(_measure_one, measure, key)


def _measure_one(measure, key, namespace, inputs):
    measure(namespace, inputs, key)
    return None


def request(task, inputs, run=None) -> str:
    """The expression the kernel evaluates for ``task`` on ``inputs`` (built by the grader); ``run``
    replaces the task's own ``run`` (a measurement: :func:`settle`, :func:`measuring`)."""
    import sys

    import cloudpickle

    # By value: the modules that define these functions are not importable in the sandbox.
    modules = {m for name, m in list(sys.modules.items()) if name.startswith("nodecourse.course.tasks")}
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
        blob = cloudpickle.dumps(functools.partial(answer, run or task.run, inputs, tuple(task.library_answers)))
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)
    text = base64.b64encode(blob).decode("ascii")
    return (
        f"__import__('pickle').loads(__import__('base64').b64decode('{text}'))"
        "(__import__('IPython').get_ipython().user_ns)"
    )
