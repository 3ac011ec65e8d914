"""Lesson 4's figures: peak memory against steps, and gradient error against the horizon."""

from __future__ import annotations

import math

from nodecourse.lessons.lesson04.config import GradientErrorConfig
from nodecourse.measure import MemorySweep

__all__ = ["plot_gradient_error", "plot_memory"]


def plot_memory(sweep: MemorySweep):
    """Peak MiB against steps, one line per gradient mode (matplotlib Figure)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for mode in sweep.config.modes:
        ax.plot(sweep.config.steps, [p / 2**20 for p in sweep.peaks(mode)], "o-", label=mode)
    c = sweep.config
    ax.set_xlabel("rk4 steps on [0, 1]")
    ax.set_ylabel("peak memory of forward + backward (MiB)")
    ax.set_title(f"batch {c.batch}, MLP {'-'.join(map(str, c.dims))}, {c.device}")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_gradient_error(rows, config: GradientErrorConfig):
    """Relative gradient error against T, adjoint (solid) and checkpoint (dashed), per tolerance;
    the title says the atol and the rotation of the rows' setting."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.set_yscale("log")
    for i, tol in enumerate(config.tolerances):
        color = f"C{i}"
        for route, style in (("adjoint", "o-"), ("checkpoint", "s--")):
            mine = [r for r in rows if r["route"] == route and r["tol"] == tol]
            # a failed solve has no error to draw: it is named in the legend instead
            pts = [(r["T"], max(r["rel_error"], 1e-17)) for r in mine if math.isfinite(r["rel_error"])]
            failed = len(mine) - len(pts)
            label = f"{route}, tol {tol:g}" + (f" ({failed} failed)" if failed else "")
            if pts:
                ax.semilogy(*zip(*pts), style, color=color, label=label)
            else:
                ax.plot([], [], style, color=color, label=label)
    ax.set_xlabel("horizon T")
    ax.set_ylabel("relative error of dL/d(z0, lam, theta, T)")
    atol = "tol" if rows[0]["atol"] == rows[0]["tol"] else f"{rows[0]['atol']:g}"
    turned = f", rotated {rows[0]['angle']:g} rad" if rows[0]["angle"] else ""
    ax.set_title(
        f"dz1/dt = {config.lam:g} z1, dz2/dt = theta z1{turned}\n({config.method}, rtol = tol, atol = {atol})",
        fontsize=10,
    )
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig
