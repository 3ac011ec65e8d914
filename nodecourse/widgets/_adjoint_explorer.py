"""Explore the adjoint's price: lam, horizon T, tolerance, gradient mode and device in; gradient
error against the analytic gradient, forward and backward NFE and peak memory out.

The problem is :class:`nodecourse.measure.DecayFeed` (a decaying mode ``lam`` feeding a
slow one). The explorer keeps its last result in :attr:`AdjointExplorer.result`, so its callbacks
can be tested without a browser::

    ex = AdjointExplorer(render=False)
    ex.T.value = 3.0
    ex.result.rel_error
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from nodecourse.widgets._base import FigureExplorer
from nodecourse.widgets._common import assemble, check_device, device_control, show_result

__all__ = ["AdjointExplorer"]

MODES = ("backprop", "checkpoint", "adjoint")


@dataclass
class AdjointResult:
    """One gradient computation in the explorer (host-side numbers)."""

    lam: float
    T: float
    tol: float
    mode: str
    device: str
    rel_error: float
    nfe: int
    nfe_backward: int
    peak_bytes: int | None
    status: str
    errors_by_mode: dict

    def summary(self) -> str:
        mem = "n/a" if self.peak_bytes is None else f"{self.peak_bytes / 1024:.0f} KiB"
        return (
            f"{self.mode} on {self.device}: gradient error {self.rel_error:.2e}, NFE forward {self.nfe}, "
            f"backward {self.nfe_backward}, peak memory {mem}, backward status {self.status}"
        )


def run_gradient(lam: float, T: float, tol: float, mode: str, device: str, method: str = "dopri5") -> AdjointResult:
    """``dL/d(z0, lam, theta, T)`` by ``mode`` (and the other modes' errors for the figure)."""
    from nodecourse.config import resolve_device
    from nodecourse.measure import gradient_table, measure_peak

    dev = resolve_device(device)
    dtype = torch.float32 if dev.type == "mps" else torch.float64
    settings = dict(method=method, rtol=tol, atol=tol, device=dev, dtype=dtype)
    table = gradient_table(lam, T, routes=MODES, **settings)  # every mode's error (and a warm-up)
    peak = None
    if dev.type in ("cuda", "cpu"):
        # Only the chosen mode's forward + backward, measured on its own.
        peak = measure_peak(lambda: gradient_table(lam, T, routes=(mode,), **settings), dev)
    row = table.row(mode)
    return AdjointResult(
        lam,
        T,
        tol,
        mode,
        dev.type,
        row.rel_error,
        row.nfe or 0,
        row.nfe_backward or 0,
        peak,
        row.status,
        {r.route: r.rel_error for r in table.rows},
    )


def result_figure(res: AdjointResult):
    """Bar chart (log scale) of the relative gradient error of each mode, the chosen one highlighted."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.0))
    modes = list(res.errors_by_mode)
    values = [res.errors_by_mode[m] if math.isfinite(res.errors_by_mode[m]) else 1e300 for m in modes]
    colors = ["C3" if m == res.mode else "C0" for m in modes]
    ax.bar(modes, [max(v, 1e-17) for v in values], color=colors)
    ax.set_yscale("log")
    ax.axhline(res.tol, color="k", ls=":", lw=1, label=f"tolerance {res.tol:g}")
    ax.set_ylabel("relative gradient error")
    ax.set_title(f"lam={res.lam:g}, T={res.T:g}: {res.summary().split(':', 1)[0]}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


class AdjointExplorer(FigureExplorer):
    """Controls: ``lam``, ``T``, ``tol`` (rtol = atol), ``mode`` (gradient), ``device``.

    A constructor value outside its control's range (``lam`` in [-30, -0.5], ``T`` in [0.25, 4],
    ``tol`` in [1e-10, 1e-3]) raises ``ValueError`` naming it.
    """

    def __init__(
        self,
        *,
        lam: float = -10.0,
        T: float = 1.0,
        tol: float = 1e-6,
        mode: str = "adjoint",
        device: str = "cpu",
        render: bool = True,
    ):
        import ipywidgets as w

        check_device(device)
        self.render = render
        self.lam = self._control(
            "lam",
            w.FloatSlider,
            lam,
            min=-30.0,
            max=-0.5,
            step=0.5,
            description="lam",
            tooltip="decay rate of the fast mode",
        )
        self.T = self._control(
            "T",
            w.FloatSlider,
            T,
            min=0.25,
            max=4.0,
            step=0.25,
            description="horizon T",
            tooltip="end time of the solve",
        )
        self.tol = self._control(
            "tol",
            w.FloatLogSlider,
            tol,
            base=10,
            min=-10,
            max=-3,
            step=1,
            description="tol",
            readout_format=".0e",
            tooltip="solver tolerance (rtol = atol)",
        )
        self.mode = self._control(
            "mode",
            w.Dropdown,
            mode,
            options=list(MODES),
            description="gradient",
            tooltip="how the gradient is computed",
        )
        self.device = device_control(device)
        self.result: AdjointResult | None = None
        assemble(self, [self.lam, self.T, self.tol, self.mode, self.device], first_row=3)

    def update(self) -> AdjointResult:
        """Recompute the gradient with the current controls (busy state meanwhile); refresh result,
        status line and figure."""
        settings = (self.lam.value, self.T.value, self.tol.value, self.mode.value, self.device.value)
        return self._recompute(lambda: run_gradient(*settings), lambda r: show_result(self, r, result_figure))
