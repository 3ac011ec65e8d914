"""What the lesson measures beside the audit: the work a fixed-step ODE-RNN solve should do, from its grid."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from nodecourse.lessons.lesson09.models import CourseModel
from nodecourse.solvers import equal_steps

__all__ = ["StepBudget", "step_budget"]


@dataclass(frozen=True)
class StepBudget:
    """The ODE-RNN's expected work per patient on its shared grid (consecutive observation times in the
    model's float32 scaling, ``gaps`` of them): ``ideal`` Euler steps over the horizon at its step size;
    ``longer``: the gaps longer than one step when compared as they are; ``naive``: the steps a rule that
    splits each gap into ``ceil(gap / step)`` would take (a sliver-sized second step per longer gap);
    ``by_rule``: the steps the library's fixed-step rule takes
    (:func:`nodecourse.solvers._fixed.equal_steps`, which counts a gap within float32 rounding of a
    whole number of steps as that number). ``step``: the solver's step (a fraction of the horizon);
    ``horizon_hours``: the horizon in hours."""

    ideal: int
    longer: int
    gaps: int
    naive: int
    by_rule: int
    step: float
    horizon_hours: float


def step_budget(model: CourseModel) -> StepBudget | None:
    """:class:`StepBudget` of the course's ODE-RNN, or None for a model that is not a fixed-step ODE-RNN."""
    from nodecourse.audit import find_cores
    from nodecourse.models.latent import HORIZON_HOURS

    core = find_cores(model.model)[0]
    step = core.module.solver.step_size if core.kind == "ode" else None
    if step is None or core.label != "ODE-RNN encoder":
        return None
    times = model.model.shared_0  # SharedInputs' first shared tensor: the grid in hours
    scaled = (times / HORIZON_HOURS).to(torch.float32)  # as the model scales it
    gaps = (scaled[1:] - scaled[:-1]).double()
    longer = int((gaps > step).sum())  # the step is a Python float: compared as float64
    naive = sum(math.ceil(g / step) for g in gaps.tolist())
    ends = scaled.double().tolist()
    by_rule = sum(equal_steps(a, b, step) for a, b in zip(ends[:-1], ends[1:]))
    return StepBudget(
        round(core.horizon / step), longer, int(gaps.numel()), naive, by_rule, float(step), float(HORIZON_HOURS)
    )
