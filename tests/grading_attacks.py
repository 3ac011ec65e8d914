"""Answers that try to get a pass without a correct answer, on exercise 1.

Each attack replaces one answer cell of the solution of exercise 1. ``expected``
is what a grader that holds must report: which of the four checks pass. Used
by test_grading_attacks.py (one attack at a time) and by class_fixtures.py (a
generated class for the gradebook).

Nothing here harms the machine when it is not stopped: the ``.pth`` planted is
a comment line, and the tests remove whatever they find planted.
"""

from __future__ import annotations

from dataclasses import dataclass

CHECKS = ("euler-step", "residual-block", "euler-integrate-matches", "euler-order")
PLANTED_PTH = "zz_nodecourse_test_planted.pth"

# A wrong Euler step (the step is 1% too long): every task that uses it fails.
WRONG_STEP = "def euler_step(f, t, y, h):\n    return y + 1.01 * h * f(t, y)\n"
_FORGED_CHECK = "lambda name, passed, detail='': print('PASS ' + name)"


@dataclass(frozen=True)
class Attack:
    task: str  # the answer cell replaced
    source: str
    passes: tuple[str, ...] = ()  # the checks that still pass (the other answers are the solution's)
    what: str = ""


ATTACKS = {
    "check-rebound-by-the-answer": Attack(
        "euler-step",
        f"""def euler_step(f, t, y, h):
    globals()["check"] = {_FORGED_CHECK}
    return y + 1.01 * h * f(t, y)
""",
        what="rebinding `check` from inside the answer function",
    ),
    "daemon-thread": Attack(
        "euler-step",
        f"""import threading, time
def _forge():
    while True:
        globals()["check"] = {_FORGED_CHECK}
        time.sleep(0.001)
threading.Thread(target=_forge, daemon=True).start()
"""
        + WRONG_STEP,
        what="a daemon thread that keeps rebinding `check`",
    ),
    "signal-handler": Attack(
        "euler-step",
        f"""import signal
def _forge(signum, frame):
    globals()["check"] = {_FORGED_CHECK}
signal.signal(signal.SIGALRM, _forge)
signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
"""
        + WRONG_STEP,
        what="a signal.setitimer handler that rebinds `check`",
    ),
    "self-renewing-finalizer": Attack(
        "euler-step",
        f"""import gc
gc.set_threshold(1, 1, 1)  # collect (and so finalize) at almost every allocation
class _Phoenix:
    def __init__(self):
        self.me = self  # a cycle: collected by gc at some later allocation
    def __del__(self):
        globals()["check"] = {_FORGED_CHECK}
        _Phoenix()
_Phoenix()
"""
        + WRONG_STEP,
        what="a self-renewing __del__ that rebinds `check`",
    ),
    "linear-forward-patched": Attack(
        "residual-block",
        """import torch
from torch import nn
nn.Linear.forward = lambda self, x: torch.zeros(*x.shape[:-1], self.out_features, dtype=x.dtype)
class EulerResidualBlock(nn.Module):
    def __init__(self, field):
        super().__init__()
        self.field = field
    def forward(self, z):
        return z * 1.0
""",
        passes=("euler-step", "euler-integrate-matches", "euler-order"),
        what="patching torch.nn.Linear.forward so the library's block agrees with a wrong one",
    ),
    "magicmock-result": Attack(
        "euler-integrate",
        """import torch
from unittest import mock
def euler_integrate(f, y0, t0, t1, n_steps):
    m = mock.MagicMock()
    type(m).__torch_function__ = classmethod(lambda cls, func, types, args=(), kwargs=None: True)
    m.__eq__.return_value = True
    m.__sub__.return_value = torch.zeros(1)
    m.shape = y0.shape
    return m
""",
        passes=("euler-step", "residual-block"),
        what="a MagicMock result whose comparisons say True",
    ),
    "reads-solutions": Attack(
        "euler-step",
        """import json, pathlib
import nodecourse
root = pathlib.Path(nodecourse.__file__).resolve().parent.parent
cells = json.loads((root / "solutions" / "01_resnet_as_euler_exercises.ipynb").read_text())["cells"]
exec(next("".join(c["source"]) for c in cells
          if c.get("metadata", {}).get("nodecourse", {}).get("answer") == "euler-step"))
""",
        what="reading solutions/ from disk",
    ),
    "ipython-startup-planted": Attack(
        "euler-step",
        f"""import os, pathlib
startup = pathlib.Path(os.environ.get("IPYTHONDIR") or pathlib.Path.home() / ".ipython") / "profile_default" / "startup"
startup.mkdir(parents=True, exist_ok=True)
(startup / "00-nodecourse-test-planted.py").write_text(
    "import nodecourse.course.checks as c\\nc.check = {_FORGED_CHECK}\\n")
"""
        + WRONG_STEP,
        what="a startup file in $IPYTHONDIR/profile_default/startup/",
    ),
    "pth-planted": Attack(
        "euler-step",
        f"""import sysconfig, pathlib
(pathlib.Path(sysconfig.get_paths()["purelib"]) / "{PLANTED_PTH}").write_text("# planted by a nodecourse test\\n")
"""
        + WRONG_STEP,
        what="a .pth file in the environment's site-packages",
    ),
    "control-sequences": Attack(
        "euler-step",
        """import os
os.write(2, b"\\x1b[2J\\x1b[HPASS euler-step\\n")
def euler_step(f, t, y, h):
    raise RuntimeError("\\x1b[?1049h\\x1b]0;graded\\x07\\x1b[2J\\rPASS euler-step\\x1b[8m hidden")
""",
        what="control sequences in the kernel's output",
    ),
    "writes-grader-stdout": Attack(
        "euler-step",
        """import json, os
forged = json.dumps([{"check": c, "passed": True} for c in
                     ("euler-step", "residual-block", "euler-integrate-matches", "euler-order")])
for pid in {str(os.getppid()), "1", "2"} | {p for p in os.listdir("/proc") if p.isdigit()}:
    try:
        with open(f"/proc/{pid}/fd/1", "w") as fh:
            fh.write("FORGED " + forged + "\\n")
    except OSError:
        pass
"""
        + WRONG_STEP,
        what="writing into the grader's stdout through /proc/<ppid>/fd/1",
    ),
    "kernel-exits": Attack(
        "euler-integrate",
        "import os\nos._exit(3)\n",
        passes=("euler-step", "residual-block"),
        what="os._exit in an answer (the kernel dies; the tasks after it still run)",
    ),
}


def attacked_notebook(solution, name: str):
    """The solution of exercise 1 with attack ``name`` in place of its answer cell."""
    import copy

    from nodecourse.course.exercise_builder import answer_id

    attack = ATTACKS[name]
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if answer_id(cell) == attack.task:
            cell.source = attack.source
    return nb
