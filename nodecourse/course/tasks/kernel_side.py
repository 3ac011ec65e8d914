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


def disabled(names):
    """Make each ``module:function`` of ``names`` raise while the task runs; returns the undo list.

    The function object itself is changed (its code swapped), so a name the learner bound to it
    earlier (``from nodecourse import odeint``) raises too."""
    import importlib

    undo = []
    for name in names:
        module, _, qualname = name.partition(":")
        try:
            obj = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            continue  # not in this version of the library: nothing to disable
        fn = getattr(obj, "__func__", obj)
        code = getattr(fn, "__code__", None)
        if code is None or code.co_freevars:
            continue
        message = REFUSAL.format(name=name)
        scope: dict = {}
        exec(f"def _refused(*args, **kwargs):\n    raise RuntimeError({message!r})\n", scope)  # noqa: S102
        fn.__code__ = scope["_refused"].__code__
        undo.append((fn, code))
    return undo


def answer(run, inputs, library_answers, namespace) -> str:
    """``run(namespace, inputs)`` as JSON text: ``{"ok": true, "value": ...}`` or
    ``{"ok": false, "type": ..., "message": ...}`` (the grader adds the likely cause)."""
    undo = disabled(library_answers)
    try:
        value = run(namespace, inputs)
        return dumps({"ok": True, "value": value})
    except BaseException as exc:  # the learner's code: any exception is its answer
        return failure_text(exc)
    finally:
        for fn, code in undo:
            fn.__code__ = code


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

    from nodecourse.measure import memory

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
