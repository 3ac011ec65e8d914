"""How many times one submission's path re-enters the grading module.

Grades one solution notebook against its own fresh build, the way
``tests/test_notebooks.py::test_solution_passes_grading`` does (quick mode, a fixed
seed), with ``sys.setprofile`` (and ``threading.setprofile``) watching this
process. A *re-entry* is a call of a function defined in the grading module made
from a frame whose code is in another module, while a frame of the grading module
is already on the stack: the grader handed the submission to another module and
that module called back in. The benchmark's own call of ``grade_notebook`` is the
entry, not a re-entry. "The grading module" is ``nodecourse/course/grading.py``
and any private stage module of it (``nodecourse/course/_grading*.py``), so that
moving code into a private module cannot lower the count. Prints the grade, the
number of re-entries with the outside function that made each (``module:function
-> grading function``, counted), and the number of distinct grading-module
functions called (lambdas, closures and generator expressions included).

    OMP_NUM_THREADS=1 NODECOURSE_QUICK=1 .venv/bin/python benchmarks/grading_reentries.py

It also counts the *hand-offs*: calls a grading-module frame makes straight into another
``nodecourse`` function (each one leaves the grading module and comes back into it), by callee.

Measured 2026-12-05 on the 2-core development machine, solution 01 (seed 0, 4/4 checks pass,
both runs):

| | before (b8b9f17, ``grade_notebook`` one long body) | after (named stages) |
|---|---|---|
| entries from outside | 1 | 1 |
| re-entries (outside code calling back in) | 0 | 0 |
| hand-offs | 185 | 142 |
| of which ``tasks.get_task`` (4 task specs) | 20 (5 a spec) | 4 (once a spec, in the plan) |
| of which ``check_id`` / ``answer_id`` | 50 / 92 | 31 / 84 |
| distinct grading-module functions called | 25 | 31 (the stages are new functions) |

Nothing outside the grading module calls back into it on a submission's path, before or
after: the hub showed as hand-offs, each stage resolving the same task specs and cell roles
again; the plan now resolves them once and the later stages are given them. (The "before" run
used an export of b8b9f17, ``git archive``, with this script copied into it.)
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("NODECOURSE_QUICK", "1")

from nodecourse.course import grading  # noqa: E402

COURSE_DIR = Path(grading.__file__).resolve().parent


def _is_grading_module(name: str) -> bool:
    """Whether a module name is the grading module's (CheckRow's generated ``__init__`` has no file)."""
    return name == "nodecourse.course.grading" or name.startswith("nodecourse.course._grading")


def _is_grading(filename: str) -> bool:
    """Whether a code object's file is the grading module (grading.py or a private _grading*.py)."""
    path = Path(filename)
    return path.parent == COURSE_DIR and (path.name == "grading.py" or path.name.startswith("_grading"))


def _where(frame) -> str:
    module = frame.f_globals.get("__name__", "?")
    return f"{module}:{frame.f_code.co_qualname}"


class Watch:
    """The profile hook: counts calls into the grading module and the re-entries among them."""

    def __init__(self) -> None:
        self.reentries: collections.Counter[str] = collections.Counter()
        self.functions: set[str] = set()
        self.entries = 0
        self.handoffs: collections.Counter[str] = collections.Counter()
        self._files: dict[str, bool] = {}

    def _grading(self, code) -> bool:
        known = self._files.get(code.co_filename)
        if known is None:
            known = self._files[code.co_filename] = _is_grading(code.co_filename)
        return known

    def __call__(self, frame, event, arg):
        if event != "call":
            return
        if not self._grading(frame.f_code):
            caller = frame.f_back
            if caller is not None and self._grading(caller.f_code):
                module = frame.f_globals.get("__name__", "")
                if module.startswith("nodecourse.") and not _is_grading_module(module):
                    self.handoffs[f"{module}:{frame.f_code.co_qualname}"] += 1
            return
        self.functions.add(_where(frame))
        caller = frame.f_back
        if caller is None or self._grading(caller.f_code):
            return
        outer = caller.f_back
        while outer is not None and not self._grading(outer.f_code):
            outer = outer.f_back
        if outer is None:
            self.entries += 1
        else:
            self.reentries[f"{_where(caller)} -> {_where(frame)}"] += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--notebook", default=str(REPO / "solutions" / "01_resnet_as_euler_exercises.ipynb"), help="the submission"
    )
    parser.add_argument("--seed", type=int, default=0, help="the task inputs' seed")
    parser.add_argument("--timeout", type=float, default=300, help="per-cell limit in seconds")
    args = parser.parse_args(argv)
    watch = Watch()
    threading.setprofile(watch)
    sys.setprofile(watch)
    try:
        rows, warnings = grading.grade_notebook(args.notebook, timeout_s=args.timeout, seed=args.seed)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    passed = sum(r.passed for r in rows)
    print(f"{Path(args.notebook).name}, seed {args.seed}: {passed}/{len(rows)} checks pass, {len(warnings)} warnings")
    print(f"entries into the grading module from outside it: {watch.entries}")
    print(f"re-entries (an outside module calling back in): {sum(watch.reentries.values())}")
    for where, n in sorted(watch.reentries.items()):
        print(f"  {n:4d}  {where}")
    handoffs = sum(watch.handoffs.values())
    print(f"hand-offs (a grading-module frame calling a nodecourse function outside it): {handoffs}")
    for where, n in sorted(watch.handoffs.items()):
        print(f"  {n:4d}  {where}")
    print(f"distinct grading-module functions called: {len(watch.functions)}")
    for name in sorted(watch.functions):
        print(f"        {name}")
    return 0 if rows and passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
