"""Probes that look at a trained 2-D classifier everywhere, not only at the sampled points.

Sample accuracy can hide a failure: a plain 2-D flow with a linear readout can
classify 99 %+ of the sampled annulus points while its decision boundary
still cuts through the ring. These probes evaluate the model densely:

- :func:`circle_probe`: along a circle |x| = r, the fraction of the circle
  classified wrongly and the minimum margin ``label * output``;
- :func:`decision_grid`: the model's output on a dense square grid, for a
  decision-boundary plot.

The model maps ``(batch, 2) -> (batch, 1)`` with the sign as the class; it is
evaluated on its own device and dtype, in chunks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from nodecourse.data import ANNULUS_RADII, annulus_label


def _param_like(model: nn.Module) -> tuple[torch.device, torch.dtype]:
    p = next(iter(model.parameters()), None)
    if p is None:
        return torch.device("cpu"), torch.get_default_dtype()
    return p.device, p.dtype


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, chunk: int = 8192) -> torch.Tensor:
    """``model(x)[:, 0]`` for ``x`` ``(n, 2)``, in chunks, in eval mode; returns shape ``(n,)``."""
    was_training = model.training
    model.eval()
    out = torch.cat([model(x[i : i + chunk])[:, 0] for i in range(0, x.shape[0], chunk)])
    model.train(was_training)
    return out


@dataclass
class CircleProbe:
    """What :func:`circle_probe` measured on the circle |x| = ``radius``.

    ``label``: the true class there (+1 ring, -1 disk); ``misclassified``: fraction
    of the ``n_points`` evenly spaced angles where ``sign(output) != label``;
    ``min_margin``: the smallest ``label * output`` found (negative means a wrong
    arc exists), refined near the worst angle; ``angles`` and ``outputs``: the
    even grid, shape ``(n_points,)`` each, on the CPU.
    """

    radius: float
    label: float
    n_points: int
    misclassified: float
    min_margin: float
    worst_angle: float
    angles: torch.Tensor
    outputs: torch.Tensor

    @property
    def all_correct(self) -> bool:
        return self.min_margin > 0


def circle_points(radius: float, angles: torch.Tensor) -> torch.Tensor:
    """Points ``(n, 2)`` at ``radius`` and ``angles`` (radians, shape ``(n,)``)."""
    return torch.stack([radius * torch.cos(angles), radius * torch.sin(angles)], dim=1)


def circle_probe(
    model: nn.Module,
    radius: float,
    *,
    n_points: int = 20_000,
    label: float | None = None,
    radii: tuple[float, float, float] = ANNULUS_RADII,
    refine: int = 2_000,
) -> CircleProbe:
    """Evaluate ``model`` densely on the circle |x| = ``radius``.

    ``label`` defaults to the annulus task's label there (-1 for radius <= r1,
    +1 for r2 <= radius <= r3); radii in the gap or outside need an explicit
    ``label``. ``refine`` extra points are spent on the two grid intervals
    around the worst angle, so a wrong arc thinner than the grid spacing is
    still likely to show in ``min_margin``.
    """
    if not radius > 0:
        raise ValueError(f"radius={radius!r}: give a positive radius")
    if isinstance(n_points, bool) or not isinstance(n_points, int) or n_points < 8:
        raise ValueError(f"n_points={n_points!r}: give an integer >= 8")
    device, dtype = _param_like(model)
    if label is None:
        label = float(annulus_label(torch.tensor([[float(radius), 0.0]]), radii)[0])
        if label == 0:
            raise ValueError(
                f"radius={radius} is neither in the disk (<= {radii[0]}) nor in the ring "
                f"[{radii[1]}, {radii[2]}]; pass label=+1 or -1"
            )
    if label not in (-1.0, 1.0):
        raise ValueError(f"label={label!r}: use +1 or -1")
    step = 2 * math.pi / n_points
    angles = torch.arange(n_points, dtype=torch.float64) * step
    out = evaluate(model, circle_points(radius, angles).to(device=device, dtype=dtype)).double().cpu()
    margins = label * out
    worst = int(margins.argmin())
    min_margin, worst_angle = float(margins[worst]), float(angles[worst])
    if refine:
        fine = angles[worst] + torch.linspace(-step, step, refine, dtype=torch.float64)
        fine_out = evaluate(model, circle_points(radius, fine).to(device=device, dtype=dtype)).double().cpu()
        fine_margin = label * fine_out
        j = int(fine_margin.argmin())
        if float(fine_margin[j]) < min_margin:
            min_margin, worst_angle = float(fine_margin[j]), float(fine[j] % (2 * math.pi))
    return CircleProbe(
        radius=float(radius),
        label=label,
        n_points=n_points,
        misclassified=float((margins <= 0).double().mean()),
        min_margin=min_margin,
        worst_angle=worst_angle,
        angles=angles,
        outputs=out,
    )


def probe_circles(model: nn.Module, radii_to_probe, **kwargs) -> list[CircleProbe]:
    """:func:`circle_probe` at each radius in ``radii_to_probe``."""
    return [circle_probe(model, float(r), **kwargs) for r in radii_to_probe]


DEFAULT_PROBE_RADII = (0.25, 0.45, 1.05, 1.25, 1.45)
"""Circles inside the disk (0.25, 0.45) and inside the ring (1.05, 1.25, 1.45)."""


@dataclass
class DecisionGrid:
    """The model's output on a square grid: ``xs``, ``ys`` ``(resolution,)``; ``outputs``
    ``(resolution, resolution)`` with rows along y (``outputs[i, j]`` is at ``(xs[j], ys[i])``)."""

    xs: torch.Tensor
    ys: torch.Tensor
    outputs: torch.Tensor

    def wrong_fraction(self, radii: tuple[float, float, float] = ANNULUS_RADII) -> float:
        """Fraction of the grid points inside the disk or ring whose sign differs from the task's label."""
        xx, yy = torch.meshgrid(self.xs, self.ys, indexing="xy")
        labels = annulus_label(torch.stack([xx.reshape(-1), yy.reshape(-1)], 1), radii)
        inside = labels != 0
        wrong = torch.sign(self.outputs.reshape(-1)) != labels
        return float((wrong & inside).double().sum() / inside.double().sum())


def decision_grid(model: nn.Module, *, extent: float = 1.75, resolution: int = 200) -> DecisionGrid:
    """Evaluate ``model`` on a ``resolution x resolution`` grid over ``[-extent, extent]^2`` (CPU tensors back)."""
    if not extent > 0:
        raise ValueError(f"extent={extent!r}: give a positive half-width")
    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 2:
        raise ValueError(f"resolution={resolution!r}: give an integer >= 2")
    device, dtype = _param_like(model)
    xs = torch.linspace(-extent, extent, resolution, dtype=torch.float64)
    xx, yy = torch.meshgrid(xs, xs, indexing="xy")
    pts = torch.stack([xx.reshape(-1), yy.reshape(-1)], 1).to(device=device, dtype=dtype)
    out = evaluate(model, pts).double().cpu().reshape(resolution, resolution)
    return DecisionGrid(xs=xs, ys=xs.clone(), outputs=out)


__all__ = [
    "CircleProbe",
    "DEFAULT_PROBE_RADII",
    "DecisionGrid",
    "circle_points",
    "circle_probe",
    "decision_grid",
    "evaluate",
    "probe_circles",
]
