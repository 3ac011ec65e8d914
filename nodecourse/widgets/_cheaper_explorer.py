"""Explore lesson 10's trade: the regularisation weight a neural ODE was trained with and the route
its gradient takes in; solver work (NFE), gradient error and peak memory out.

The explorer shows a precomputed grid, ``{(weight, route): numbers}``, one entry per pair (lesson 10
computes it with ``nodecourse.lessons.lesson10.explorer_grid``: one training per weight, one gradient
per route), so moving a control never trains anything. Each entry holds ``"test NFE"``, ``"accuracy"``,
``"NFE fwd"``, ``"NFE bwd"``, ``"error vs accurate"``, ``"error vs own steps"`` and ``"peak KiB"``.
The explorer keeps its last result in :attr:`CheaperExplorer.result`, so its callbacks can be
tested without a browser::

    ex = CheaperExplorer(grid, render=False)
    ex.route.value = "adjoint"
    ex.result.error_accurate
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from nodecourse.widgets._base import FigureExplorer
from nodecourse.widgets._common import assemble, show_result

KEYS = ("test NFE", "accuracy", "NFE fwd", "NFE bwd", "error vs accurate", "error vs own steps", "peak KiB")


@dataclass
class CheaperResult:
    """One (weight, route) entry of the grid, with every route's entry at that weight for the figure."""

    weight: float
    route: str
    test_nfe: int
    accuracy: float
    nfe: int
    nfe_backward: int
    error_accurate: float
    error_own: float
    peak_kib: float
    by_route: dict

    def summary(self) -> str:
        return (
            f"weight {self.weight:g}, {self.route}: test NFE {self.test_nfe}, test accuracy "
            f"{self.accuracy:.1%}; gradient NFE forward {self.nfe}, backward {self.nfe_backward}; gradient "
            f"error {self.error_accurate:.1e} against an accurate solve, {self.error_own:.1e} against backprop "
            f"through its own steps; peak memory {self.peak_kib:.0f} KiB"
        )


def check_grid(grid: Mapping) -> tuple[list[float], list[str]]:
    """The weights and routes of ``grid`` (in first-seen order); ``ValueError`` naming what is missing
    when it is empty, not a full weights x routes product, or an entry lacks one of :data:`KEYS`."""
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(
            "CheaperExplorer: grid must be a non-empty mapping {(weight, route): numbers}; "
            "build it with nodecourse.lessons.lesson10.explorer_grid()"
        )
    weights = list(dict.fromkeys(w for w, _ in grid))
    routes = list(dict.fromkeys(r for _, r in grid))
    missing = [(w, r) for w in weights for r in routes if (w, r) not in grid]
    if missing:
        raise ValueError(f"CheaperExplorer: grid lacks the pairs {missing}; it needs every weight with every route")
    for key, entry in grid.items():
        lacking = [k for k in KEYS if k not in entry]
        if lacking:
            raise ValueError(f"CheaperExplorer: grid entry {key} lacks {lacking}")
    return weights, routes


def result_for(grid: Mapping, weight: float, route: str) -> CheaperResult:
    """The :class:`CheaperResult` for ``(weight, route)`` from ``grid``."""
    e = grid[weight, route]
    routes = list(dict.fromkeys(r for _, r in grid))
    return CheaperResult(
        weight,
        route,
        int(e["test NFE"]),
        float(e["accuracy"]),
        int(e["NFE fwd"]),
        int(e["NFE bwd"]),
        float(e["error vs accurate"]),
        float(e["error vs own steps"]),
        float(e["peak KiB"]),
        {r: dict(grid[weight, r]) for r in routes},
    )


def result_figure(res: CheaperResult):
    """Three panels over the routes at the chosen weight (the chosen route in red): NFE forward and
    backward, relative gradient error (log scale), peak memory."""
    import matplotlib.pyplot as plt

    routes = list(res.by_route)
    x = range(len(routes))
    colours = ["C3" if r == res.route else "C0" for r in routes]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.2))
    fwd = [res.by_route[r]["NFE fwd"] for r in routes]
    bwd = [res.by_route[r]["NFE bwd"] for r in routes]
    axes[0].bar(x, fwd, color=colours, label="forward")
    axes[0].bar(x, bwd, bottom=fwd, color=colours, alpha=0.45, label="backward")
    axes[0].set_ylabel("evaluations of f per gradient")
    axes[0].legend(fontsize=7)
    floor = 1e-17  # an exact zero drawn at the floor of the log axis

    def shown(v):
        return max(v, floor) if math.isfinite(v) else 1e300

    width = 0.4
    axes[1].bar(
        [i - width / 2 for i in x],
        [shown(res.by_route[r]["error vs accurate"]) for r in routes],
        width,
        color=colours,
        label="against an accurate solve",
    )
    axes[1].bar(
        [i + width / 2 for i in x],
        [shown(res.by_route[r]["error vs own steps"]) for r in routes],
        width,
        color=colours,
        alpha=0.45,
        label="against backprop through its own steps",
    )
    axes[1].set_yscale("log")
    axes[1].set_ylim(bottom=floor / 10)
    axes[1].set_ylabel("relative gradient error")
    axes[1].legend(fontsize=7)
    axes[2].bar(x, [res.by_route[r]["peak KiB"] for r in routes], color=colours)
    axes[2].set_ylabel("peak memory, forward + backward (KiB)")
    for ax in axes:
        ax.set_xticks(list(x))
        ax.set_xticklabels(routes, rotation=30, ha="right", fontsize=8)
    fig.suptitle(
        f"trained with kinetic and Jacobian weight {res.weight:g}: test NFE {res.test_nfe}, "
        f"accuracy {res.accuracy:.1%} (chosen route in red)",
        fontsize=9,
    )
    fig.tight_layout()
    plt.close(fig)
    return fig


class CheaperExplorer(FigureExplorer):
    """Controls: ``weight`` (the kinetic and Jacobian weight the model was trained with) and ``route``
    (the gradient route), each offering exactly the values in ``grid``.

    A constructor value the grid does not hold raises ``ValueError`` naming it.
    """

    def __init__(self, grid: Mapping, *, weight: float = 0.01, route: str = "reversible", render: bool = True):
        import ipywidgets as w

        weights, routes = check_grid(grid)
        self.grid = dict(grid)
        self.render = render
        self.weight = self._control(
            "weight",
            w.Dropdown,
            weight,
            options=weights,
            description="reg. weight",
            tooltip="kinetic and Jacobian weight the model was trained with",
        )
        self.route = self._control(
            "route", w.Dropdown, route, options=routes, description="gradient", tooltip="the route the gradient takes"
        )
        self.result: CheaperResult | None = None
        assemble(self, [self.weight, self.route], first_row=2)

    def update(self) -> CheaperResult:
        """Read the grid at the current controls; refresh :attr:`result`, the status line and the figure."""
        weight, route = self.weight.value, self.route.value
        return self._recompute(
            lambda: result_for(self.grid, weight, route), lambda r: show_result(self, r, result_figure)
        )


__all__ = ["CheaperExplorer"]
