"""Exercise 11 (beyond ODEs): the solution passes, the blank exercise fails as not done, the
library's own answers are refused, and the checks' references agree with torchsde, torchcde and the
library's solvers on the same data.

The full calibration (2,000 seeds, the catalogue of mistakes) is in ``tests/test_grading_calibration.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nodecourse.course import tasks
from nodecourse.course.tasks import calibration, ex11, plain
from nodecourse.course.tasks.spec import make_inputs

CHECKS = ("em-step", "em-order", "cde-contract", "cde-solve", "path-change", "missing-lookahead")
_NS: dict = {}


def _namespace(built: bool = False) -> dict:
    if built not in _NS:
        _NS[built] = calibration.namespace("11", built=built)
    return _NS[built]


def _inputs(check: str, seed: int) -> dict:
    return make_inputs(tasks.get_task("11", check), seed)


def test_the_exercise_is_registered_with_its_checks():
    assert "11" in tasks.CONVERTED
    assert tuple(tasks.tasks_for("11")) == CHECKS
    assert calibration.solution_path("11").name == f"{ex11.EXERCISE}.ipynb"


@pytest.mark.parametrize("check", CHECKS)
def test_the_solution_passes_on_a_few_seeds(check, torch_defaults):
    failed = calibration.failures("11", check, range(3), _namespace())
    assert not failed, failed


@pytest.mark.parametrize("check", CHECKS)
def test_the_blank_exercise_fails_every_check_as_not_done(check, torch_defaults):
    verdict = calibration.verdict("11", check, 1, _namespace(built=True))
    assert not verdict.passed and verdict.detail == "NotImplementedError: task not done", verdict


LIBRARY_EM = """
import torch
from nodecourse.sde import sdeint as solve  # a renamed import
class _SDE:
    noise_type, sde_type = "diagonal", "ito"
    def __init__(self, f, g):
        self.f, self.g = f, g
def euler_maruyama_step(f, g, t, y, h, dw):
    ts = torch.tensor([t, t + h], dtype=y.dtype)
    return solve(_SDE(f, g), y, ts, method="euler", dt=h, bm=lambda s, u: dw).ys[-1]
"""

LIBRARY_CDE = """
from nodecourse.cde import CDEField
class _X:
    def __init__(self, v):
        self.v = v
    def derivative(self, t):
        return self.v
def cde_vector_field(fz, dxdt):
    return CDEField(_X(dxdt), lambda t, z: fz)(None, fz[..., 0])
"""


@pytest.mark.parametrize(
    "check,source,named",
    [("em-step", LIBRARY_EM, "nodecourse.sde._solve:sdeint"), ("cde-contract", LIBRARY_CDE, "CDEField.forward")],
)
def test_the_librarys_own_answer_is_refused_while_the_task_runs(check, source, named, torch_defaults):
    ns: dict = {}
    exec(compile(source, "<answer>", "exec"), ns)
    reply = plain.decode(tasks.answer_text("11", check, 2, ns))
    assert reply["ok"] is False and "this task asks you to write it (" in reply["message"], reply
    assert named in reply["message"], reply
    verdict = calibration.verdict("11", check, 2, ns)
    assert not verdict.passed and "this task asks you to write it" in verdict.detail, verdict


def test_the_library_answers_again_after_the_task(torch_defaults):
    ns: dict = {}
    exec(compile(LIBRARY_EM, "<answer>", "exec"), ns)
    inp = _inputs("em-step", 0)
    tasks.answer_text("11", "em-step", 0, ns)
    f = lambda t, y: -y  # noqa: E731
    g = lambda t, y: 0.5 * y  # noqa: E731
    got = ns["euler_maruyama_step"](f, g, 0.0, inp["y"], inp["h"], inp["dw"])
    torch.testing.assert_close(got, inp["y"] - inp["y"] * inp["h"] + 0.5 * inp["y"] * inp["dw"])


class _Increments:
    """``bm(s, t)``: the coarse increments of a draw on its grid of step ``h``."""

    def __init__(self, coarse: torch.Tensor, h: float):
        self.coarse, self.h = coarse, h

    def __call__(self, s, t):
        return self.coarse[int(round(float(s) / self.h))]


class _GBM(torch.nn.Module):
    noise_type, sde_type = "diagonal", "ito"

    def __init__(self, mu: float, sigma: float):
        super().__init__()
        self.mu, self.sigma = mu, sigma

    def f(self, t, y):
        return self.mu * y

    def g(self, t, y):
        return self.sigma * y


def test_the_strong_order_reference_is_euler_maruyama_of_the_library_and_of_torchsde(torch_defaults):
    """The closed form the judge uses (a product over the steps) is the library's and torchsde's Euler-Maruyama
    on the same increments, at every factor."""
    import torchsde

    from nodecourse.sde import sdeint

    inp = _inputs("em-order", 0)
    paths, n = ex11._gbm(inp), inp["dw"].shape[0]
    y0 = torch.full(inp["dw"].shape[1:], inp["y0"], dtype=torch.float64)
    sde = _GBM(inp["mu"], inp["sigma"])
    for k, closed in zip(inp["factors"], paths["em"]):
        h = inp["T"] * k / n
        bm = _Increments(inp["dw"].reshape(n // k, k, *inp["dw"].shape[1:]).sum(1), h)
        ts = torch.tensor([0.0, inp["T"]], dtype=torch.float64)
        ours = sdeint(sde, y0, ts, method="euler", dt=h, bm=bm)
        torch.testing.assert_close(ours.ys[-1], closed, rtol=1e-12, atol=1e-12)
        theirs = torchsde.sdeint(sde, y0, ts, method="euler", dt=h, bm=_TorchsdeBM(bm, y0))
        torch.testing.assert_close(theirs[-1], closed, rtol=1e-12, atol=1e-12)


class _TorchsdeBM:
    """torchsde asks its ``bm`` for these attributes besides the increments."""

    levy_area_approximation = "none"

    def __init__(self, bm: _Increments, like: torch.Tensor):
        self.bm, self.shape, self.dtype, self.device = bm, like.shape, like.dtype, like.device

    def __call__(self, s, t=None):
        return self.bm(s, t)


def test_every_order_draw_has_a_margin_to_the_window():
    assert ex11.ORDER_WINDOW[0] < ex11.ORDER_BAND[0] < 0.5 < ex11.ORDER_BAND[1] < ex11.ORDER_WINDOW[1]
    for seed in range(5):
        ref = ex11.order_reference(_inputs("em-order", seed))
        assert ex11.ORDER_BAND[0] < ref["order"] < ex11.ORDER_BAND[1], (seed, ref["order"])
        assert ref["errors"] == sorted(ref["errors"]), "the error grows with the step size"


def test_the_contraction_reference_is_the_librarys_cde_field(torch_defaults):
    from nodecourse.cde import CDEField

    for fz, dx in _inputs("cde-contract", 0)["cases"]:
        fz = fz.detach()
        field = CDEField(type("X", (), {"derivative": staticmethod(lambda t, v=dx: v)})(), lambda t, z, m=fz: m)
        torch.testing.assert_close(field(torch.tensor(0.0), fz[..., 0]), torch.einsum("bhc,bc->bh", fz, dx))


def test_the_path_reference_agrees_with_torchcde_and_shows_the_causality(torch_defaults):
    """Hermite with backward differences moves only after t[k-1]; the natural spline moves before it. The
    change is torchcde's on the same data."""
    import torchcde

    for seed in range(3):
        inp = _inputs("path-change", seed)
        ref = ex11.path_reference(inp)
        t, k, s = inp["t"], inp["k"], inp["s"]
        assert ref["hermite"]["first"] > float(t[k - 1]) and ref["natural"]["first"] < float(t[k - 1])
        x_new = inp["x"].clone()
        x_new[k] = inp["new"]
        for kind, coeffs in (
            ("hermite", torchcde.hermite_cubic_coefficients_with_backward_differences),
            ("natural", torchcde.natural_cubic_coeffs),
        ):
            paths = [torchcde.CubicSpline(coeffs(x, t), t) for x in (inp["x"], x_new)]
            theirs = torch.stack([paths[1].evaluate(v) - paths[0].evaluate(v) for v in s])
            np.testing.assert_allclose(ref[kind]["change"].numpy(), theirs.numpy(), atol=1e-12)
    missing = _inputs("missing-lookahead", 0)
    first = ex11.missing_reference(missing)["hermite"]["first"]
    assert first < float(missing["t"][missing["k"] - 1]), "a missing value before k looks ahead to x[k]"
