"""Lesson 2's declared settings: step counts per order, the order tolerance, the problem's horizon."""

from __future__ import annotations

from nodecourse.solvers import SOLVERS

__all__ = ["ORDER_STEPS", "ORDER_TOLERANCE", "STEPS_BY_ORDER", "STEPS_OVERRIDE", "T_END", "order_steps"]

#: Step counts on [0, 2] by declared order: powers of two (so t + k*h is exact in binary) chosen so
#: the error stays well above float64 round-off and well inside the asymptotic regime.
STEPS_BY_ORDER: dict[int, tuple[int, ...]] = {
    1: (32, 64, 128, 256, 512),
    2: (32, 64, 128, 256, 512),
    3: (16, 32, 64, 128, 256),
    4: (8, 16, 32, 64, 128),
    5: (8, 16, 32, 64),
}
#: Methods still pre-asymptotic at their order's counts on this problem (measured: rk38's slope
#: over 8..128 steps is more than ORDER_TOLERANCE from 4; from 32 steps on it is 4).
STEPS_OVERRIDE: dict[str, tuple[int, ...]] = {"rk38": (32, 64, 128, 256, 512)}


def order_steps(method) -> tuple[int, ...]:
    """The step counts of :func:`convergence` for ``method`` (a registered name or a tableau):
    :data:`STEPS_OVERRIDE` where a method needs its own, else by its declared order."""
    from nodecourse.solvers import spec_for

    spec = spec_for(method)
    return STEPS_OVERRIDE.get(spec.name) or STEPS_BY_ORDER[min(max(spec.order, 1), max(STEPS_BY_ORDER))]


#: Every registered method's step counts (derived: a new registry line needs no entry here).
ORDER_STEPS: dict[str, tuple[int, ...]] = {name: order_steps(name) for name in SOLVERS}
ORDER_TOLERANCE = 0.3  # |measured - declared| allowed for "holds"
T_END = 2.0
