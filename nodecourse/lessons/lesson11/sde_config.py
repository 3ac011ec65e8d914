"""Lesson 11's SDE thresholds and study sizes: declared here, before anything is measured.

The three thresholds are the ledger rows ``sde-strong-orders``, ``sde-adjoint-matches-backprop`` and
``sde-adjoint-memory-flat``; the frozen configs are the sizes of the studies, quick and full (each a key of
the study cache).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodecourse.claims import Threshold

# ----------------------------------------------------------------------------------------------
# Thresholds

#: The strong order each scheme is proved to have (Kloeden & Platen 1992, Thms 10.2.2 and 10.3.5).
STRONG_ORDERS: dict[str, float] = {"euler": 0.5, "milstein": 1.0}
#: How far the slope's whole interval may sit from the order and still hold.
ORDER_BAND = 0.15
STRONG_ORDER_THRESHOLD = Threshold(
    "geometric Brownian motion against its exact solution on the same Brownian path, float64; error = "
    "E|X_T - X_T exact| over paths; slope of log error on log step over at least 4 halvings, 95 % interval by "
    "bootstrap over paths. Holds if each scheme's interval lies within its order +- 0.15 (Euler-Maruyama "
    "[0.35, 0.65], Milstein [0.85, 1.15]); does not hold if either interval lies entirely outside its band; "
    "undecided otherwise",
    kind="course",
    why="the orders 0.5 and 1.0 are theorems (Kloeden & Platen 1992); the band of +- 0.15 is the course's "
    "room for the pre-asymptotic error of the coarsest steps, and half the gap between the two orders keeps "
    "them apart",
    value=ORDER_BAND,
)

#: The relative gradient error the adjoint may have at the finest step, on every seed.
FINEST_ERROR = 1e-2
ADJOINT_THRESHOLD = Threshold(
    "relative gradient error of the stochastic adjoint against backprop through the same solver (reversible "
    "Heun, Stratonovich), on the same Brownian path, at >= 4 step sizes, over seeds: holds if the error falls "
    "as the step shrinks (95 % interval of the fitted slope of log error on log step above 0) and the error at "
    "the finest step is <= 1e-2 on every seed; does not hold if the slope interval lies at or below 0; "
    "undecided otherwise",
    kind="course",
    why="Li et al. 2020 show the gap shrinking with the step (Fig. 4) without a tolerance; 1e-2 is the course's "
    "bound for a gradient that trains as backprop's would (a 1 % error in each update's direction)",
    value=FINEST_ERROR,
)

ADJOINT_FLAT = 1.5  # the adjoint's peak at 8N over its peak at N, at most (holds)
ADJOINT_GROWS = 2.0  # ... at least (does not hold)
BACKPROP_GROWS = 4.0  # backprop's peak at 8N over its peak at N, at least (holds)
STEP_FACTOR = 8  # the sweep compares N steps with 8N
SDE_MEMORY_THRESHOLD = Threshold(
    "peak memory of forward + backward at N and 8N steps (torch's CPU profiler, or CUDA's peak): holds if the "
    "adjoint's peak at 8N is <= 1.5x its peak at N while backprop's is >= 4x; does not hold if the adjoint's "
    "grows >= 2x; undecided otherwise",
    kind="course",
    why="Li et al. 2020 state O(1) memory in the number of steps for the adjoint, O(L) for backprop (Table 1), "
    "with no figure; 8x the steps should give backprop at least half of 8x once the fixed part is paid, and the "
    "adjoint's 1.5x leaves room for the Brownian path's bounded cache and the allocator's granularity",
    value=ADJOINT_FLAT,
)

# ----------------------------------------------------------------------------------------------
# Study sizes


@dataclass(frozen=True)
class StrongOrderConfig:
    """Geometric Brownian motion ``dX = mu X dt + sigma X dW`` (Ito), ``X(0) = x0`` on ``[0, 1]``: ``paths``
    independent paths (one :class:`~nodecourse.sde.BrownianPath` of size ``(paths, 1)`` from ``seed``), solved
    at ``dt = 2**-k`` for ``k`` in ``levels``; ``bootstrap`` resamples of the paths for the slope's interval."""

    methods: tuple[str, ...] = ("euler", "milstein")
    mu: float = 0.5
    sigma: float = 1.0
    x0: float = 1.0
    paths: int = 500
    levels: tuple[int, ...] = (4, 5, 6, 7, 8)
    seed: int = 0
    bootstrap: int = 1000
    dtype: str = "float64"
    device: str = "cpu"


QUICK_STRONG = StrongOrderConfig()
"""Quick mode: 500 paths, dt = 2^-4 ... 2^-8 (4 halvings)."""
FULL_STRONG = StrongOrderConfig(paths=4000, levels=(4, 5, 6, 7, 8, 9, 10), bootstrap=2000)
"""Full mode: 4000 paths, dt = 2^-4 ... 2^-10 (6 halvings)."""


@dataclass(frozen=True)
class AdjointConfig:
    """A small neural SDE per seed (Stratonovich, diagonal noise; drift an MLP ``dim -> hidden -> dim``,
    diffusion ``s * tanh(y + b) + s / 10`` per channel) with ``batch`` starts, solved on ``[0, 1]`` by reversible
    Heun at ``dt = 2**-k`` for ``k`` in ``levels``; the loss reads the state at ``T / 2`` and ``T``."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    levels: tuple[int, ...] = (3, 4, 5, 6, 7, 8)
    dim: int = 4
    hidden: int = 16
    batch: int = 16
    dtype: str = "float64"
    device: str = "cpu"


QUICK_ADJOINT = AdjointConfig()
"""Quick mode: 5 seeds, dt = 2^-3 ... 2^-8."""
FULL_ADJOINT = AdjointConfig(seeds=tuple(range(10)), levels=(3, 4, 5, 6, 7, 8, 9, 10), batch=64)
"""Full mode: 10 seeds, dt = 2^-3 ... 2^-10, batch 64."""


@dataclass(frozen=True)
class SDEMemoryConfig:
    """Peak memory of one forward + backward pass of a neural SDE (reversible Heun, as in
    :class:`AdjointConfig`, ``dim -> hidden -> dim``) with ``batch`` states, at ``steps`` and ``STEP_FACTOR *
    steps`` steps on ``[0, 1]``. The Brownian path is made inside the pass (its cache is memory the pass holds)
    with ``cache_size`` values kept; ``extra_readings`` adds the adjoint with no path cache and with the path's
    default cache (8192 values), not judged."""

    steps: int = 16
    batch: int = 512
    dim: int = 8
    hidden: int = 64
    cache_size: int = 64
    extra_readings: bool = True
    dtype: str = "float32"
    device: str = "cpu"
    seed: int = 0
    cpu_method: str = "profiler"  # measure_peak's CPU reading: "profiler" (exact, slow to start) or "rss"


QUICK_SDE_MEMORY = SDEMemoryConfig(extra_readings=False)
"""Quick mode: 16 and 128 steps, the two judged routes only (the no-cache reading alone takes seconds under the
profiler: every query descends the path's tree afresh)."""
FULL_SDE_MEMORY = SDEMemoryConfig(steps=32, batch=1024)
"""Full mode: 32 and 256 steps, batch 1024, with the two extra readings of the adjoint."""
