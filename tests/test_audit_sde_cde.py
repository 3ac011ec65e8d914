"""The audit on SDE and CDE models as their libraries' READMEs write them.

An SDE solve (``torchsde.sdeint``, ``torchsde.sdeint_adjoint``, the library's ``nodecourse.sde.sdeint``)
is refused by name (:class:`~nodecourse.audit._observed.UnsupportedSolveError`): the call and its site,
what the audit would need (a dt sweep on paths fixed by a Brownian seed, strong-order checks, gradients
on the same path), and that it measures nothing rather than treat the SDE as an ODE. A CDE
(``torchcde.cdeint`` with torchcde's README model, the same model with :func:`nodecourse.cde.cdeint`)
is audited end to end, reported as a CDE, and its longer horizon says whether the stretched grid runs
past the interpolation's last knot (checked against the knots by hand), or that this is not known.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from outside_models import spirals
from torch import nn

import nodecourse.cde as ncde
from nodecourse.audit import audit
from nodecourse.audit._control import control_interval, past_the_data
from nodecourse.audit._discovery import CoreNotFoundError
from nodecourse.audit._hook import SolveHook
from nodecourse.audit._observed import SDE_NEED, UnsupportedSolveError, observe
from nodecourse.sde import sdeint as course_sdeint

torch.set_num_threads(1)
HERE = Path(__file__).name
torchsde = pytest.importorskip("torchsde")
torchcde = pytest.importorskip("torchcde")


def _line_of(text: str) -> int:
    lines = Path(__file__).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line and "_line_of" not in line)


# --- SDEs: torchsde's README model, and the library's sdeint -------------------------------------


class SDE(nn.Module):
    """torchsde's README SDE: ``f`` the drift, ``g`` the diagonal diffusion, Itô."""

    noise_type = "diagonal"
    sde_type = "ito"

    def __init__(self, d: int = 3):
        super().__init__()
        self.mu = nn.Linear(d, d)
        self.sigma = nn.Linear(d, d)

    def f(self, t, y):  # drift
        return self.mu(y)

    def g(self, t, y):  # diffusion
        return torch.sigmoid(self.sigma(y))


class SDERegressor(nn.Module):
    """``y0 (batch, 3) -> one prediction``: the state at ``t = 1`` read out; ``solver`` picks the call."""

    def __init__(self, solver: str = "torchsde"):
        super().__init__()
        self.sde = SDE()
        self.head = nn.Linear(3, 1)
        self.solver = solver

    def forward(self, y0):
        ts = torch.linspace(0, 1, 5)
        if self.solver == "torchsde":
            ys = torchsde.sdeint(self.sde, y0, ts, method="euler", dt=0.05)
        elif self.solver == "torchsde_adjoint":
            ys = torchsde.sdeint_adjoint(self.sde, y0, ts, method="euler", dt=0.05)
        else:
            ys = course_sdeint(self.sde, y0, ts, method="euler", dt=0.05).ys
        return self.head(ys[-1]).squeeze(-1)


def _sde_refusal(solver: str) -> str:
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(12, 3, generator=g), torch.randn(12, generator=g)
    model = SDERegressor(solver)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(UnsupportedSolveError) as err:
        audit(model, (x, y), (x, y), task="regression", quick=True, progress=False, epochs=1)
    assert isinstance(err.value, CoreNotFoundError) and isinstance(err.value, TypeError)  # a refusal, not a crash
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    return str(err.value)


def _says_what_it_would_need(text: str) -> None:
    assert SDE_NEED in text
    for need in ("sweep over dt", "Brownian path seed", "strong order", "gradients compared on the same path"):
        assert need in text, need
    assert "does not treat the SDE as an ODE" in text and "measures nothing of this model" in text


@pytest.mark.parametrize(
    "solver, entry, call",
    [
        ("torchsde", "torchsde.sdeint", "ys = torchsde.sdeint("),
        ("torchsde_adjoint", "torchsde.sdeint_adjoint", "ys = torchsde.sdeint_adjoint("),
    ],
)
def test_a_torchsde_model_is_refused_naming_the_call_and_what_the_audit_would_need(solver, entry, call):
    text = _sde_refusal(solver)
    assert f"solves with torchsde ({entry} called at {HERE}:{_line_of(call)} (SDERegressor.forward))" in text
    _says_what_it_would_need(text)


def test_the_library_sdeint_is_refused_by_name_too():
    text = _sde_refusal("course")
    site = f"{HERE}:{_line_of('ys = course_sdeint(')} (SDERegressor.forward)"
    assert f"solves with nodecourse.sde (nodecourse.sde.sdeint called at {site})" in text
    _says_what_it_would_need(text)


def test_torchcde_on_the_torchsde_backend_is_refused_as_a_cde_not_an_sde():
    class CDEOnSDE(nn.Module):
        def __init__(self):
            super().__init__()
            self.func = CDEFunc(3, 4)
            self.initial = nn.Linear(3, 4)

        def forward(self, coeffs):
            X = torchcde.CubicSpline(coeffs)
            z0 = self.initial(X.evaluate(X.interval[0]))
            z = torchcde.cdeint(X=X, z0=z0, func=self.func, t=X.interval, backend="torchsde", dt=0.5, method="midpoint")
            return z[:, -1].sum(-1)

    coeffs, _ = _spirals(8)
    y = torch.randn(8)
    with pytest.raises(UnsupportedSolveError) as err:
        audit(CDEOnSDE(), (coeffs, y), (coeffs, y), task="regression", quick=True, progress=False, epochs=1)
    text = str(err.value)
    assert "torchcde.cdeint (backend='torchsde') called at" in text and "backend='torchdiffeq'" in text
    assert SDE_NEED not in text  # the model's CDE is no SDE of its own


# --- CDEs: torchcde's README model, and the same model on the library's cdeint ------------------


class CDEFunc(nn.Module):
    """torchcde's README ``CDEFunc``: ``f(t, z)`` of shape ``(batch, hidden, input)`` (smaller widths)."""

    def __init__(self, input_channels: int, hidden_channels: int, width: int = 16):
        super().__init__()
        self.input_channels = input_channels
        self.hidden_channels = hidden_channels
        self.linear1 = nn.Linear(hidden_channels, width)
        self.linear2 = nn.Linear(width, input_channels * hidden_channels)

    def forward(self, t, z):
        z = self.linear1(z)
        z = z.relu()
        z = self.linear2(z)
        z = z.tanh()  # the README's remark: a tanh here keeps the CDE's solution from blowing up
        return z.view(z.size(0), self.hidden_channels, self.input_channels)


class NeuralCDE(nn.Module):
    """torchcde's README ``NeuralCDE`` (hermite cubic coefficients in, one logit out); ``library``:
    ``"torchcde"`` as the README writes it, or ``"nodecourse"``: the same model on
    :mod:`nodecourse.cde` (its ``CubicSpline`` and ``cdeint``, torchcde's tolerances)."""

    def __init__(self, input_channels: int = 3, hidden_channels: int = 4, output_channels: int = 1, library="torchcde"):
        super().__init__()
        self.func = CDEFunc(input_channels, hidden_channels)
        self.initial = nn.Linear(input_channels, hidden_channels)
        self.readout = nn.Linear(hidden_channels, output_channels)
        self.library = library

    def forward(self, coeffs):
        if self.library == "torchcde":
            X = torchcde.CubicSpline(coeffs)
            z0 = self.initial(X.evaluate(X.interval[0]))
            z_T = torchcde.cdeint(X=X, z0=z0, func=self.func, t=X.interval)
            z_T = z_T[:, 1]
        else:
            X = ncde.CubicSpline(coeffs)
            z0 = self.initial(X.evaluate(X.interval[0]))
            z_T = ncde.cdeint(X=X, func=self.func, z0=z0, t=X.interval, rtol=1e-4, atol=1e-6).ys[-1]
        return self.readout(z_T).squeeze(-1)


def _spirals(n: int, length: int = 5, seed: int = 0):
    """torchcde's README data, shrunk (:func:`outside_models.spirals` on ``[0, pi]``): natural cubic
    coefficients ``(n, length - 1, 12)`` and the labels."""
    x, y = spirals(n, length, math.pi, seed)
    return torchcde.natural_cubic_coeffs(x), y


def _cde_audit(library: str):
    torch.manual_seed(0)
    coeffs, y = _spirals(16)
    model = NeuralCDE(library=library)
    train, test = (coeffs[:8], y[:8]), (coeffs[8:], y[8:])
    # scored as a regression on the 0/1 labels: the bootstrap of an AUC costs more than the solves here
    return model, coeffs, audit(model, train, test, task="regression", quick=True, progress=False, epochs=1)


@pytest.fixture(scope="module")
def cde_audits():
    """Each CDE model audited once, in quick mode (shared by the tests that read its report)."""
    return {library: _cde_audit(library) for library in ("torchcde", "nodecourse")}


@pytest.mark.parametrize(
    "library, call",
    [("torchcde", "z_T = torchcde.cdeint("), ("nodecourse", "z_T = ncde.cdeint(")],
)
def test_a_cde_model_is_audited_end_to_end_and_reported_as_a_cde(cde_audits, library, call):
    _, _, report = cde_audits[library]
    assert [s.verdict for s in report.steps if s.verdict == "failed"] == [], [s.summary for s in report.steps]
    (core,) = report.model["settings"]
    # named at the user's cdeint call (not inside torchcde or nodecourse.cde), and as a CDE
    assert core["site"] == f"{HERE}:{_line_of(call)} (NeuralCDE.forward)"
    assert core["label"].startswith(f"{library}.cde.cdeint solve (a CDE" if library == "nodecourse" else "torchcde.")
    assert "a CDE" in report.model["cores"][0]


def test_the_two_cde_models_compute_the_same_function(cde_audits):
    """The library's cdeint on torchcde's coefficients agrees with torchcde's (same weights)."""
    model, coeffs, _ = cde_audits["torchcde"]
    twin = NeuralCDE(library="nodecourse")
    twin.load_state_dict(model.state_dict())
    with torch.no_grad():
        ours, theirs = twin(coeffs), model(coeffs)
    assert torch.allclose(ours, theirs, atol=1e-3), (ours - theirs).abs().max()


@pytest.mark.parametrize("library", ["torchcde", "nodecourse"])
def test_horizon_x2_says_the_control_path_runs_past_its_last_knot(cde_audits, library):
    _, coeffs, report = cde_audits[library]
    s4 = report.step(4)
    (horizon,) = [g for g in s4.data["regimes"] if g["regime"] == "horizon x2"]
    (path,) = horizon["control_paths"]
    # the knots by hand: hermite/natural coefficients without times sit at 0, 1, ..., length - 1
    last = float(coeffs.size(-2))
    assert path["interval"] == [0.0, last] and path["end"] == pytest.approx(2 * last)
    assert path["extrapolated"] is True
    assert "runs past the interpolation's last knot" in path["sentence"]
    assert "extrapolated beyond its last observation, not observed data" in path["sentence"]
    assert path["sentence"] in s4.summary


class HalfWay(nn.Module):
    """The library's cdeint over the first half of the path (``path``: ``"spline"``, or ``"bare"``: a
    path with a derivative but no interval)."""

    def __init__(self, path: str = "spline"):
        super().__init__()
        self.func = CDEFunc(3, 4)
        self.path = path

    def forward(self, coeffs):
        X = ncde.CubicSpline(coeffs)
        t = torch.stack([X.interval[0], X.interval.mean()])
        if self.path == "bare":
            X = Bare(X)
        z0 = torch.zeros(coeffs.size(0), 4)
        return ncde.cdeint(X=X, func=self.func, z0=z0, t=t, rtol=1e-4, atol=1e-6).ys[-1].sum(-1)


class Bare:
    """A control path with ``derivative`` only: its interval cannot be read."""

    def __init__(self, X):
        self.derivative = X.derivative


def _half_way_call(path: str):
    coeffs, _ = _spirals(4)
    with SolveHook() as hook:
        (core,) = observe(HalfWay(path), coeffs, hook)
    return core


def test_a_horizon_that_stays_within_the_knots_says_the_path_is_observed():
    core = _half_way_call("spline")
    assert core.label.startswith("nodecourse.cde.cdeint solve (a CDE")
    found = past_the_data(core.call, 2.0)
    assert found["interval"] == [0.0, 4.0] and found["end"] == pytest.approx(4.0)  # ends on the last knot
    assert found["extrapolated"] is False and "observed throughout" in found["sentence"]
    assert past_the_data(core.call, 2.5)["extrapolated"] is True


def test_a_path_without_an_interval_is_not_known_rather_than_guessed():
    core = _half_way_call("bare")
    assert control_interval(core.call.func) is None
    found = past_the_data(core.call, 2.0)
    assert found["extrapolated"] is None and found["interval"] is None
    assert "is not known" in found["sentence"] and "runs past" in found["sentence"]
