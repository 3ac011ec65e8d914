"""The review flag and the refusal in the grade, and the run-time half of "write it yourself".

``grading.assemble`` reads the learner's answers (:mod:`nodecourse.course.answer_reading`): an
answer that uses what its task asks the learner to write is refused (stubs that raise follow its own
lines, so its checks fail saying why) and named in a ``review:`` warning; what the reader cannot
decide is named in a ``review:`` warning with its line; the solutions get neither. While a task
runs, the library's (and torchdiffeq's, torchdeq's) own answer raises however it is reached: a
``functools.partial`` or a closure put in place of the module attribute, a copy of its code put
back inside the answer.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
import torch
from test_answer_reading import (
    ANDERSON_FIXED_POINT,
    DIVERGENCE_LIBRARY,
    ERROR_NORM_LIBRARY,
    EULER_TORCHDIFFEQ,
    EULER_TORCHDIFFEQ_MODULE,
    HEUN_CLOSURE,
    HEUN_PARTIAL,
    HEUN_SAVED_CODE,
    HUTCHINSON_LIBRARY,
    RK4_LIBRARY,
    WEIGHTS_LIBRARY,
)

from nodecourse.course import grading, tasks
from nodecourse.course.exercise_builder import answer_id
from nodecourse.course.tasks import plain

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((REPO / "solutions").glob("*.ipynb"))


def _solution(exercise: str):
    (path,) = [p for p in SOLUTIONS if p.name.startswith(exercise + "_")]
    return nbformat.read(path, as_version=4)


def _with(nb, **answers):
    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        task = answer_id(cell)
        if task is not None and task.replace("-", "_") in answers:
            cell.source = answers[task.replace("-", "_")]
    return nb


def _reviews(warnings) -> list[str]:
    return [w for w in warnings if w.startswith("review: ")]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name[:2])
def test_the_solutions_get_no_review_flag(path):
    nb = nbformat.read(path, as_version=4)
    _, warnings = grading.assemble(nb, nb)
    assert not _reviews(warnings), warnings


def test_ordinary_pytorch_gets_no_review_flag():
    source = (
        "import matplotlib.pyplot as plt\n\n"
        "def accuracy_at(model, x, y, tol):\n"
        "    model.eval()  # eval mode: no dropout\n"
        "    n_layers = sum(1 for _ in model.modules())\n"
        "    with torch.no_grad():\n"
        "        sol = model.block.solve(x, rtol=tol, atol=tol)\n"
        "        logits = model.readout(sol.ys[-1])\n"
        "    model.train()\n"
        "    plt.plot(logits[:, 0].numpy())\n    plt.close()\n"
        "    return float((logits.argmax(dim=1) == y).double().mean()), int(sol.stats['nfe'])\n"
    )
    nb = _solution("09")
    _, warnings = grading.assemble(_with(nb, accuracy_at=source), nb)
    assert not _reviews(warnings), warnings


def test_an_answer_using_the_librarys_answer_is_refused_in_the_grade_and_named():
    nb = _solution("01")
    assembled, warnings = grading.assemble(_with(nb, euler_step=EULER_TORCHDIFFEQ), nb)
    (review,) = [w for w in _reviews(warnings) if w.startswith("review: answer 'euler-step'")]
    assert "uses what its task asks the learner to write" in review and "line 2: torchdiffeq.odeint" in review
    (cell,) = [c for c in assembled.cells if answer_id(c) == "euler-step"]
    assert cell.source.startswith(EULER_TORCHDIFFEQ)  # the learner's lines are unchanged
    # an answer built on it is refused too, naming the helper it goes through
    assert any(w.startswith("review: answer 'euler-integrate'") and "euler_step -> torchdiffeq" in w for w in warnings)
    ns: dict = {}
    exec(compile(cell.source, "<answer>", "exec"), ns)
    with pytest.raises(RuntimeError, match=r"this task asks you to write it \(line 2: torchdiffeq.odeint"):
        ns["euler_step"](lambda t, y: -y, 0.0, torch.ones(2), 0.1)


def test_what_the_reader_cannot_decide_is_flagged_with_the_line():
    nb = _solution("10")
    hidden = (
        "import importlib\n"
        "def reversible_heun_step(func, t, h, y, zh, f):\n"
        "    m = importlib.import_module('nodecourse.solvers.' + '_reversible')\n"
        "    return getattr(m, 'heun' + '_step')(func, t, h, y, zh, f)\n"
    )
    _, warnings = grading.assemble(_with(nb, heun_step=hidden), nb)
    (review,) = [w for w in _reviews(warnings) if w.startswith("review: answer 'heun-step'")]
    assert "reaches into the interpreter" in review
    assert "line 1: importlib" in review and "line 4: getattr (an attribute whose name is built at run time)" in review


# --- at run time: the library's own answer raises however it is reached ---------------------------


def _reply(exercise: str, check: str, source: str, seed: int = 3) -> dict:
    ns: dict = {}
    exec(compile(source, "<answer>", "exec"), ns)
    return plain.decode(tasks.answer_text(exercise, check, seed, ns))


def _refused(reply: dict) -> bool:
    return reply.get("ok") is False and reply.get("message", "").startswith("this task asks you to write it")


@pytest.fixture
def reversible_module():
    """The learner's code replaces attributes of the library module: put them back after the test."""
    import nodecourse.solvers._reversible as module

    saved = dict(vars(module))
    yield module
    for name in ("heun_step", "heun_inverse", "integrate"):
        setattr(module, name, saved[name])


@pytest.mark.parametrize("source", [HEUN_PARTIAL, HEUN_CLOSURE], ids=["partial", "closure"])
def test_a_wrapper_in_place_of_the_module_attribute_does_not_hide_the_library(source, reversible_module):
    reply = _reply("10", "heun-step", source)
    assert _refused(reply) and "heun_step" in reply["message"], reply


def test_a_saved_code_object_put_back_inside_the_answer_is_refused(reversible_module):
    genuine = reversible_module.heun_step.__code__
    reply = _reply("10", "heun-step", HEUN_SAVED_CODE)
    assert _refused(reply) and "put back while the task ran" in reply["message"], reply
    assert reversible_module.heun_step.__code__ is genuine  # and the library is whole again


def test_anderson_through_the_librarys_fixed_point_with_a_built_name_is_refused():
    source = (
        "import importlib\n"
        "_fp = importlib.import_module('nodecourse.deq._fixed_point')\n"
        "_code = getattr(_fp, 'fixed' + '_point').__code__\n"
        "def anderson(f, z0, m=6, tol=1e-8, max_iter=3000):\n"
        "    g = getattr(_fp, 'fixed' + '_point')\n"
        "    g.__code__ = _code\n"
        "    r = g(lambda z: f(z), z0, method='anderson', tol=tol, max_iter=max_iter)\n"
        "    return r.z, r.n_iter\n"
    )
    import importlib

    fp = importlib.import_module("nodecourse.deq._fixed_point")  # (the package's attribute is the function)
    genuine = fp.fixed_point.__code__
    try:
        assert _refused(_reply("06", "anderson", source))
        assert _refused(_reply("06", "anderson", "from nodecourse import fixed_point\n" + ANDERSON_FIXED_POINT))
    finally:
        fp.fixed_point.__code__ = genuine


@pytest.mark.parametrize(
    "exercise, check, source",
    [
        ("01", "euler-step", EULER_TORCHDIFFEQ),
        ("01", "euler-integrate-matches", "import torch\n" + EULER_TORCHDIFFEQ_MODULE),
        ("02", "rk4-step-matches", "import torch\nfrom nodecourse import odeint\n" + RK4_LIBRARY),
        ("02", "error-norm", ERROR_NORM_LIBRARY),
        (
            "06",
            "mixing-weights",
            "import torch\n"
            "from nodecourse.deq._anderson import anderson_weights as library_weights\n" + WEIGHTS_LIBRARY,
        ),
        ("08", "exact-divergence", DIVERGENCE_LIBRARY),
        ("08", "hutchinson", HUTCHINSON_LIBRARY),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else "",
)
def test_one_library_call_no_longer_answers_a_task(exercise, check, source, torch_defaults):
    reply = _reply(exercise, check, source)
    assert _refused(reply), reply


@pytest.mark.slow
def test_the_grader_refuses_torchdiffeq_answering_exercise_1(tmp_path):
    """End to end: ``nodecourse grade`` of a notebook whose Euler answers call torchdiffeq."""
    from notebook_fixtures import write

    nb = _with(_solution("01"), euler_step=EULER_TORCHDIFFEQ, euler_integrate=EULER_TORCHDIFFEQ_MODULE)
    path = write(nb, tmp_path / "01_resnet_as_euler_exercises.ipynb")
    rows, warnings = grading.grade_notebook(path, seed=5, timeout_s=120)
    by = {r.check: r for r in rows}
    for check in ("euler-step", "euler-integrate-matches", "euler-order"):
        assert not by[check].passed and "this task asks you to write it" in by[check].reason, by[check]
    assert any(w.startswith("review: answer 'euler-step' uses what its task asks") for w in warnings), warnings


def test_a_refused_class_raises_on_use_as_well():
    """``LearnerAdjoint.apply``: the refusal is raised when an attribute of a refused class is read."""
    source = (
        "from torchdiffeq import odeint_adjoint\n\n"
        "class LearnerAdjoint(torch.autograd.Function):\n"
        "    @staticmethod\n"
        "    def forward(ctx, func, t1, n_steps, y0, *params):\n"
        "        return odeint_adjoint(func, y0, torch.tensor([0.0, t1]))[-1]\n"
    )
    nb = _solution("04")
    assembled, warnings = grading.assemble(_with(nb, learner_adjoint=source), nb)
    assert any(w.startswith("review: answer 'learner-adjoint' uses what its task asks") for w in warnings), warnings
    (cell,) = [c for c in assembled.cells if answer_id(c) == "learner-adjoint"]
    ns: dict = {"torch": torch}
    exec(compile(cell.source, "<answer>", "exec"), ns)
    with pytest.raises(RuntimeError, match="this task asks you to write it"):
        ns["LearnerAdjoint"].apply(None, 1.0, 4, torch.ones(2))
