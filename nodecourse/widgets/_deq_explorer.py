"""A live explorer of a DEQ's forward solve: pick the solver, the tolerance, the weight of the
Jacobian regulariser the block was trained with, and a device; see the iterations, the status
and the residual trace.

Blocks are trained on demand (a small Bai et al. 2021 regression, once per weight, cached), so
the first selection of a weight takes a few seconds. The explorer keeps its last result in
:attr:`DEQExplorer.result`, so its callbacks can be tested without a browser::

    ex = DEQExplorer(render=False)
    ex.method.value = "picard"
    ex.result.n_iter, ex.result.status
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from nodecourse.deq import METHODS, DEQModel, fit_deq, fixed_point
from nodecourse.widgets._base import FigureExplorer
from nodecourse.widgets._common import assemble, check_device, device_control, show_result

__all__ = ["DEQExplorer"]

JAC_WEIGHTS = (0.0, 0.3, 1.0, 3.0)
TOLERANCES = (1e-2, 1e-3, 1e-4, 1e-6, 1e-8)
_BLOCKS: dict[tuple[float, int], DEQModel] = {}


def trained_model(jac_weight: float, *, epochs: int = 60, seed: int = 0) -> DEQModel:
    """A DEQ regressor trained (float32, CPU) on the Bai et al. synthetic task with ``jac_weight``; cached."""
    key = (float(jac_weight), epochs)
    if key not in _BLOCKS:
        from nodecourse.deq import bai_synthetic

        x, y = bai_synthetic(128, seed=seed)
        torch.manual_seed(seed)
        # lesson 6's training setting, where solves at the iteration cap are expected: no warning per step
        model = DEQModel(1, 1, state_dim=16, width=50, tol=1e-3, max_iter=40, warn=False)
        fit_deq(model, x, y, epochs=epochs, lr=1e-2, jac_weight=float(jac_weight), seed=seed)
        _BLOCKS[key] = model.eval()
    return _BLOCKS[key]


@dataclass
class DEQExplorerResult:
    """One forward solve of the trained block on a grid of inputs (host-side numbers).

    ``residuals``: the worst sample's relative residual per iteration, ``(n_iter,)``.
    """

    method: str
    tol: float
    jac_weight: float
    device: str
    status: str
    n_iter: int
    final_residual: float
    residuals: list[float]
    seconds: float

    def summary(self) -> str:
        return (
            f"{self.method}, tol {self.tol:.0e}, trained with Jacobian weight {self.jac_weight:g}, "
            f"{self.device}: {self.status}, {self.n_iter} iterations, final relative residual "
            f"{self.final_residual:.1e}, {self.seconds * 1e3:.0f} ms"
        )


def run_deq(
    method: str, tol: float, jac_weight: float, device: str, *, max_iter: int = 200, n_inputs: int = 256
) -> DEQExplorerResult:
    """Solve the trained block's fixed point for ``n_inputs`` inputs on [-2, 2] with ``method`` to ``tol``."""
    from nodecourse.config import resolve_device

    dev = resolve_device(device)
    model = trained_model(jac_weight)
    block = model.block.to(dev)
    x = torch.linspace(-2, 2, n_inputs, device=dev).unsqueeze(1)
    z0 = torch.zeros(n_inputs, model.deq.state, device=dev)
    start = time.perf_counter()
    with torch.no_grad():
        r = fixed_point(lambda z: block(z, x), z0, method=method, tol=tol, max_iter=max_iter, warn=False)
    seconds = time.perf_counter() - start
    model.block.to("cpu")
    return DEQExplorerResult(
        method,
        tol,
        float(jac_weight),
        dev.type,
        r.status.name,
        r.n_iter,
        r.final_residual("rel"),
        r.residuals.worst("rel"),
        seconds,
    )


def result_figure(res: DEQExplorerResult):
    """Plotly figure: the worst relative residual against the iteration (log scale), with the tolerance."""
    from nodecourse.plotting import figure

    fig = figure(
        res.summary(),
        "iteration (evaluations of f)",
        "worst relative residual ||f(z) − z|| / ||f(z)||",
        log_y=True,
        height=340,
    )
    fig.add_scatter(x=list(range(1, len(res.residuals) + 1)), y=res.residuals, name=res.method, mode="lines+markers")
    fig.add_hline(y=res.tol, line_dash="dash", annotation_text="tolerance")
    fig.update_layout(title_font_size=12)
    return fig


class DEQExplorer(FigureExplorer):
    """ipywidgets controls (solver, tolerance, regulariser weight, device) and a live residual plot."""

    def __init__(
        self,
        *,
        method: str = "anderson",
        tol: float = 1e-4,
        jac_weight: float = 0.0,
        device: str = "cpu",
        render: bool = True,
    ):
        import ipywidgets as w

        check_device(device)
        self.render = render
        self.method = self._control(
            "method",
            w.Dropdown,
            method,
            options=sorted(METHODS),
            description="solver",
            tooltip="the fixed-point solver",
        )
        self.tol = self._control(
            "tol",
            w.SelectionSlider,
            tol,
            options=[(f"{t:.0e}", t) for t in TOLERANCES],
            description="tol",
            tooltip="relative residual at which the solve stops",
        )
        self.jac_weight = self._control(
            "jac_weight",
            w.Dropdown,
            jac_weight,
            options=list(JAC_WEIGHTS),
            description="Jacobian reg.",
            tooltip="weight of the Jacobian regulariser the block was trained with",
        )
        self.device = device_control(device)
        self.result: DEQExplorerResult | None = None
        assemble(self, [self.method, self.tol, self.jac_weight, self.device], first_row=2)

    def update(self) -> DEQExplorerResult:
        """Solve with the current control values; refresh :attr:`result`, the status line and the figure."""
        settings = (self.method.value, self.tol.value, self.jac_weight.value, self.device.value)
        return self._recompute(lambda: run_deq(*settings), lambda r: show_result(self, r, result_figure))
