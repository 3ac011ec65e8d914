"""Lesson 10's figures (matplotlib Figures, closed so a notebook shows each once)."""

from __future__ import annotations

from nodecourse.lessons.lesson10.config import SEMINORM_THRESHOLD
from nodecourse.lessons.lesson10.studies import MoonsRun, SeminormTaskResult, TrainedStability
from nodecourse.measure import MemorySweep
from nodecourse.solvers import amplification

__all__ = [
    "plot_memory",
    "plot_nfe_training",
    "plot_seminorm_tasks",
    "plot_stability",
    "plot_trained_convergence",
]


def plot_nfe_training(runs: tuple[MoonsRun, ...]):
    """Forward NFE per training step, one thin line per seed and setting."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for i, name in enumerate(dict.fromkeys(r.setting for r in runs)):
        for j, r in enumerate(r for r in runs if r.setting == name):
            ax.plot(range(1, len(r.nfe) + 1), r.nfe, color=f"C{i}", alpha=0.7, lw=1, label=name if j == 0 else None)
    ax.set_xlabel("training step (full batch)")
    ax.set_ylabel("forward NFE per step")
    ax.set_title("neural ODE on two moons, dopri5 rtol = atol = 1e-5", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_memory(sweep: MemorySweep):
    """Peak MiB against steps, backprop and reversible."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for mode in sweep.config.modes:
        ax.plot(sweep.config.steps, [p / 2**20 for p in sweep.peaks(mode)], "o-", label=mode)
    c = sweep.config
    ax.set_xlabel("reversible Heun steps on [0, 1]")
    ax.set_ylabel("peak memory, forward + backward (MiB)")
    ax.set_title(f"batch {c.batch}, MLP {'-'.join(map(str, c.dims))}, {c.device}", fontsize=10)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_stability(extent: float = 1.5, n: int = 301):
    """Where one reversible Heun step does not amplify (max |eigenvalue| <= 1) in the plane of
    ``h lam``, beside RK4's region."""
    import matplotlib.pyplot as plt
    import numpy as np

    xs = np.linspace(-3.0, extent, n)
    ys = np.linspace(-3.0, 3.0, n)
    X, Y = np.meshgrid(xs, ys)
    Z = X + 1j * Y
    rk4 = np.abs(1 + Z + Z**2 / 2 + Z**3 / 6 + Z**4 / 24)
    fig, ax = plt.subplots(figsize=(5.2, 4.2))
    ax.contourf(X, Y, rk4 <= 1, levels=[0.5, 1.5], colors=["C0"], alpha=0.3)
    ax.contour(X, Y, rk4, levels=[1.0], colors=["C0"])
    on_axis = np.linspace(-1, 1, 50)
    ax.plot(np.zeros_like(on_axis), on_axis, color="C3", lw=4, label="reversible Heun: the segment (-i, i)")
    ax.plot([], [], color="C0", label="rk4: |R(h lam)| <= 1")
    ax.set_xlabel("Re(h lam)")
    ax.set_ylabel("Im(h lam)")
    ax.set_title(
        f"linear stability (reversible Heun amplifies off the axis: max |mu| at h lam = -0.1 is "
        f"{amplification(-0.1):.3f})",
        fontsize=8,
    )
    ax.legend(fontsize=8, loc="lower left")
    ax.set_aspect("equal")
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_trained_convergence(rows: tuple[TrainedStability, ...]):
    """Relative error of reversible Heun's z(1) against the steps, one line per trained model (log-log),
    with a slope -2 guide."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 3.6))
    names = list(dict.fromkeys(r.setting for r in rows))
    labelled: set[str] = set()
    for r in rows:
        ax.loglog(
            r.steps,
            r.errors,
            "o-",
            color=f"C{names.index(r.setting)}",
            alpha=0.7,
            ms=3,
            label=None if r.setting in labelled else r.setting,
        )
        labelled.add(r.setting)
    steps = rows[0].steps
    top = max(r.errors[0] for r in rows)
    ax.loglog(steps, [top * (steps[0] / n) ** 2 for n in steps], "k:", label="slope -2 (second order)")
    ax.set_xlabel("reversible Heun steps on [0, 1]")
    ax.set_ylabel("relative error of z(1) against dopri5 at 1e-10")
    ax.set_title("the trained moons fields, every seed", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_seminorm_tasks(results: tuple[SeminormTaskResult, ...]):
    """Backward evaluations saved by the seminorm (%), per task: each seed as a dot, the task's mean as a bar,
    ours and torchdiffeq's side by side, with the published median (40 %) as a line."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    width = 0.38
    for j, (lib, label) in enumerate((("nodecourse", "ours"), ("torchdiffeq", "torchdiffeq"))):
        xs = [i + (j - 0.5) * width for i in range(len(results))]
        ax.bar(xs, [100 * r.reduction(lib) for r in results], width, color=f"C{j}", alpha=0.6, label=label)
        for x, r in zip(xs, results):
            ax.plot([x] * len(r.counts), [100 * c.reduction(lib) for c in r.counts], "k.", ms=3)
    ax.axhline(100 * SEMINORM_THRESHOLD.value, color="C3", ls="--", label="published median (40 %)")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(range(len(results)), [r.task.name for r in results], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("backward NFE saved by the seminorm (%)")
    ax.set_title("one gradient per task and seed (dots: seeds)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    plt.close(fig)
    return fig
