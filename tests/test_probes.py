"""The circle probe and the decision grid, checked on models whose answers are known exactly."""

import math

import pytest
import torch
from torch import nn

from nodecourse.measure import circle_probe, decision_grid, probe_circles


class Affine(nn.Module):
    """output = a . x + b, shape (n, 2) -> (n, 1)."""

    def __init__(self, a, b, dtype=torch.float32):
        super().__init__()
        self.lin = nn.Linear(2, 1).to(dtype)
        with torch.no_grad():
            self.lin.weight.copy_(torch.tensor([a], dtype=dtype))
            self.lin.bias.fill_(b)

    def forward(self, x):
        return self.lin(x)


class Radial(nn.Module):
    """output = |x|^2 - 0.5625: negative inside |x| = 0.75, positive outside (a perfect classifier)."""

    def __init__(self):
        super().__init__()
        self.dummy = nn.Parameter(torch.zeros(()))

    def forward(self, x):
        return (x.pow(2).sum(1, keepdim=True) - 0.5625) + 0 * self.dummy


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_wrong_arc_of_a_line_is_measured_exactly(dtype):
    # The line x1 = -1.2 cuts |x| = 1.25 in an arc of half-angle acos(1.2 / 1.25).
    probe = circle_probe(Affine([1.0, 0.0], 1.2, dtype), 1.25, n_points=20_000)
    expected = math.acos(1.2 / 1.25) / math.pi
    assert probe.label == 1.0
    assert abs(probe.misclassified - expected) < 2e-4
    assert probe.min_margin == pytest.approx(-0.05, abs=1e-5)
    assert abs(probe.worst_angle - math.pi) < 1e-3
    assert not probe.all_correct


def test_refinement_finds_an_arc_thinner_than_the_grid():
    # Wrong only where x1 < -1.25 + 1e-6: an arc far thinner than 2 pi / 64.
    probe = circle_probe(Affine([1.0, 0.0], 1.25 - 1e-6, torch.float64), 1.25, n_points=64, refine=2001)
    assert probe.min_margin < 0


def test_perfect_classifier_has_positive_margins_everywhere():
    probes = probe_circles(Radial(), [0.25, 0.45, 1.05, 1.25, 1.45], n_points=2000)
    assert [p.label for p in probes] == [-1.0, -1.0, 1.0, 1.0, 1.0]
    assert all(p.misclassified == 0 and p.min_margin > 0 for p in probes)
    assert probes[0].min_margin == pytest.approx(0.5625 - 0.0625, abs=1e-5)


def test_decision_grid_shape_and_wrong_fraction():
    grid = decision_grid(Radial(), extent=1.75, resolution=41)
    assert grid.outputs.shape == (41, 41)
    assert grid.wrong_fraction() == 0.0
    # A constant +1 classifier is wrong exactly on the disk: area pi 0.5^2 out of pi (0.5^2 + 1.5^2 - 1^2).
    const = Affine([0.0, 0.0], 1.0)
    frac = decision_grid(const, resolution=301).wrong_fraction()
    assert frac == pytest.approx(0.25 / 1.5, abs=0.01)


def test_probe_errors_name_the_argument():
    with pytest.raises(ValueError, match="radius=0.75"):
        circle_probe(Radial(), 0.75)  # in the gap: no label unless given
    assert circle_probe(Radial(), 0.75, label=1.0, n_points=100).min_margin == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(ValueError, match="n_points=3"):
        circle_probe(Radial(), 1.25, n_points=3)
    with pytest.raises(ValueError, match="label=2"):
        circle_probe(Radial(), 1.25, label=2)
    with pytest.raises(ValueError, match="resolution=1"):
        decision_grid(Radial(), resolution=1)
