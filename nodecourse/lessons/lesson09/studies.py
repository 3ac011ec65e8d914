"""What the lesson measures beside the audit: the work a fixed-step ODE-RNN solve should do, from its grid."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from nodecourse.lessons.lesson09.models import CourseModel

__all__ = ["StepBudget", "step_budget"]


@dataclass(frozen=True)
class StepBudget:
    """The ODE-RNN's expected work per patient: ``ideal`` Euler steps over the horizon at its step size, and
    how many of the shared grid's ``gaps`` (consecutive observation times, in the model's float32 scaling)
    are ``longer`` than one step: each such gap costs one more, sliver-sized, step.
    ``step`` is the solver's step (a fraction of the horizon) and ``horizon_hours`` the horizon in hours."""

    ideal: int
    longer: int
    gaps: int
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
    return StepBudget(round(core.horizon / step), longer, int(gaps.numel()), float(step), float(HORIZON_HOURS))
