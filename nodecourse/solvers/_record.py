"""The solver's own record of its steps: every attempted step's start time, size,
error ratio and whether it was accepted.

Asked for with ``odeint(..., record_steps=True)`` (``record_steps="states"`` also
keeps the state at every accepted step boundary) and read from
``Solution.steps``; ``on_step=callback`` sees each step as it happens (a
:class:`StepEvent`). Recording costs a few list appends per step and nothing
when not asked for.

Conventions:

- ``t0`` and ``h`` are Python floats (signed: ``h < 0`` when integrating
  backwards); in per-sample mode each entry is a tensor of shape ``(B,)``.
- ``error_ratio`` is the RMS error of the step divided by the tolerance (a step
  is accepted when it is ``<= 1``); ``nan`` where the method has no estimate
  (fixed-step methods, fixed-step implicit methods, a Newton iteration that
  failed) and ``inf`` when the step produced NaN/inf.
- ``accepted``: the step's end state was kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

__all__ = ["StepEvent", "StepRecord"]


class StepEventModifiedError(RuntimeError):
    """``on_step`` changed the event's ``y0`` or ``y1`` in place (they are the solver's own state)."""


@dataclass
class StepEvent:
    """One attempted step, as passed to ``on_step``.

    ``y0`` is the state at ``t0`` and ``y1`` the state proposed at ``t0 + h``
    (the rejected proposal when ``accepted`` is False). They are the solver's own
    tensors (with their autograd graph): read them, do not modify them in place (a change in place
    raises :class:`StepEventModifiedError` naming ``on_step``; a write through ``.data`` is not seen).
    In per-sample mode ``t0``, ``h``, ``error_ratio``, ``accepted`` and ``active``
    are tensors of shape ``(B,)`` and ``active`` marks the elements that took
    part in this batched step (the others had already finished or failed).
    """

    t0: Any
    h: Any
    error_ratio: Any
    accepted: Any
    y0: torch.Tensor
    y1: torch.Tensor
    active: Any = True


@dataclass
class StepRecord:
    """Every attempted step of one solve, in the order the solver tried them.

    Attributes:
        t0, h, error_ratio, accepted: one entry per attempted step (see the module doc).
        states: with ``record_steps="states"`` (scalar mode): the state (detached) at the
            start of every accepted step followed by the final state, so ``states[k]`` is
            the state at ``accepted_steps()[k][0]`` and ``states[-1]`` the last state
            reached; otherwise None.
        per_sample: entries are tensors of shape ``(B,)`` (plus ``active``).
        active: per-sample mode only: which elements took part in each batched step.
    """

    t0: list = field(default_factory=list)
    h: list = field(default_factory=list)
    error_ratio: list = field(default_factory=list)
    accepted: list = field(default_factory=list)
    states: Optional[list[torch.Tensor]] = None
    per_sample: bool = False
    active: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.t0)

    @property
    def n_accepted(self) -> int:
        if self.per_sample:
            return int(sum(int(a.sum()) for a in self.accepted))
        return sum(1 for a in self.accepted if a)

    @property
    def n_rejected(self) -> int:
        if self.per_sample:
            return int(sum(int((act & ~a).sum()) for a, act in zip(self.accepted, self.active)))
        return len(self.accepted) - self.n_accepted

    def accepted_steps(self) -> list[tuple[float, float]]:
        """``(t0, h)`` of each accepted step, in order (scalar mode): consecutive steps chain,
        ``t0[k+1] == t0[k] + h[k]``."""
        if self.per_sample:
            raise ValueError(
                "accepted_steps() is for one trajectory; in per_sample mode use "
                "as_tensors() and mask with accepted (shape (n_steps, B))"
            )
        return [(t, h) for t, h, a in zip(self.t0, self.h, self.accepted) if a]

    def as_tensors(self) -> dict[str, torch.Tensor]:
        """The columns as tensors: shape ``(n_steps,)``, or ``(n_steps, B)`` in per-sample mode.

        ``t0``, ``h``, ``error_ratio`` in float64 (CPU in scalar mode, the solve's device in
        per-sample mode); ``accepted`` (and ``active``) bool.
        """
        if self.per_sample:
            out = {
                k: torch.stack(getattr(self, k)) if getattr(self, k) else torch.empty(0)
                for k in ("t0", "h", "error_ratio", "accepted", "active")
            }
            return out
        f64 = torch.float64
        return {
            "t0": torch.tensor(self.t0, dtype=f64),
            "h": torch.tensor(self.h, dtype=f64),
            "error_ratio": torch.tensor(self.error_ratio, dtype=f64),
            "accepted": torch.tensor(self.accepted, dtype=torch.bool),
        }

    def __repr__(self) -> str:
        mode = ", per_sample" if self.per_sample else ""
        kept = f", states={len(self.states)}" if self.states is not None else ""
        return f"StepRecord({len(self)} attempted, {self.n_accepted} accepted{mode}{kept})"


class Recorder:
    """What an integrator calls once per attempted step; fills a :class:`StepRecord` and/or
    calls ``on_step``. ``Recorder.off`` (``enabled`` False) makes the call a no-op check."""

    def __init__(
        self, record: bool | str = False, on_step: Optional[Callable[[StepEvent], Any]] = None, per_sample: bool = False
    ):
        self.record = StepRecord(per_sample=per_sample, states=[] if record == "states" else None) if record else None
        self.on_step = on_step
        self.keep_states = record == "states"
        self.enabled = bool(record) or on_step is not None

    def start(self, y0: torch.Tensor) -> None:
        """The initial state (kept with ``record_steps="states"``)."""
        record = self.record
        if record is not None and record.states is not None:  # exactly when keep_states
            record.states.append(y0.detach())

    def step(self, t0, h, ratio, accepted, y0: torch.Tensor, y1: torch.Tensor, active=True) -> None:
        if self.record is not None:
            rec = self.record
            rec.t0.append(t0)
            rec.h.append(h)
            rec.error_ratio.append(ratio)
            rec.accepted.append(accepted)
            if rec.per_sample:
                rec.active.append(active)
            if rec.states is not None and accepted:  # keep_states; scalar mode only (odeint checks)
                rec.states.append(y1.detach())
        if self.on_step is not None:
            # the event's states are the solver's own tensors: a change in place (version counters,
            # two attribute reads; inference-mode tensors have none) would corrupt the solve silently
            tracked = not (y0.is_inference() or y1.is_inference())
            before = (y0._version, y1._version) if tracked else None
            self.on_step(StepEvent(t0, h, ratio, accepted, y0, y1, active))
            if tracked and (y0._version, y1._version) != before:
                raise StepEventModifiedError(
                    "on_step changed the StepEvent's y0 or y1 in place; they are the solver's own state tensors, so "
                    "the solve would go on from the changed values and report success with a wrong answer. on_step "
                    "must only read the event: copy what you want to change (event.y1.clone()). (A write through "
                    "`.data` is not seen by this check.)"
                )


OFF = Recorder()
