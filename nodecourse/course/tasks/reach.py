"""What each answer may reach: the "write it yourself" rule of every exercise, declared as data.

Two tables, read by the grader and by the notebook's self-check alike:

- :data:`ANSWERS`: exercise key -> answer id -> :class:`Reach`, the code an
  answer cell may not reference (dotted prefixes, matched on the name as
  written and on the object's own module and qualified name, so a re-export
  or an alias is the same object). The grader reads every answer cell
  (:mod:`nodecourse.course.answer_reading`): a reference to a forbidden name,
  directly or through a helper defined in another answer cell, is reported
  with its line; what the reader cannot decide (a name built at run time, a
  code object, ``eval``) is flagged for a person to read, with its line.
- :data:`RUN_TIME`: exercise key -> check id -> ``"module:qualname"`` functions
  disabled while that check's task runs
  (:func:`nodecourse.course.tasks.kernel_side.disabled`), added to the
  exercise module's own ``LIBRARY_ANSWERS``; the library's, torchdiffeq's and
  torchdeq's versions alike.

Every answer cell of every converted exercise has an entry, so no task is
left undecided: "write it yourself" answers (``WRITE``) may reach torch and
the standard library only; the others may use the library's solvers and
models, except the pieces that would answer them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reach:
    """What one answer cell may not reach.

    ``forbidden``: dotted prefixes ("torchdiffeq", "nodecourse.deq._anderson.anderson_weights");
    ``allowed``: longer prefixes that are exceptions to ``forbidden``; ``asks``: what the
    answer is to write, in words (the refusal names it)."""

    forbidden: tuple[str, ...]
    asks: str
    allowed: tuple[str, ...] = ()

    def refuses(self, dotted: str) -> str:
        """The forbidden prefix ``dotted`` falls under ("" when it may be reached)."""

        def under(prefix: str) -> bool:
            return dotted == prefix or dotted.startswith(prefix + ".")

        if any(under(p) for p in self.allowed):
            return ""
        return next((p for p in self.forbidden if under(p)), "")


# Other ODE and DEQ libraries in the course's environment: they answer the same tasks.
OTHER_LIBRARIES = ("torchdiffeq", "torchdeq")
_LESSONS = "nodecourse.lessons"  # the lessons' own code shows the answers


def _write(asks: str) -> Reach:
    """An answer written from torch and the standard library only."""
    return Reach(("nodecourse", *OTHER_LIBRARIES), asks)


def _using_library(asks: str, *forbidden: str, allowed: tuple[str, ...] = ()) -> Reach:
    """An answer that may use the library, except ``forbidden`` (and the lessons' code)."""
    return Reach((*forbidden, _LESSONS), asks, allowed)


ANSWERS: dict[str, dict[str, Reach]] = {
    "01": {
        "euler-step": _write("an Euler step"),
        "residual-block": _write("a residual block as one Euler step"),
        "euler-integrate": _write("Euler integration"),
    },
    "02": {
        "rk4-step": _write("a classical Runge-Kutta step"),
        "error-norm": _write("the error norm of an adaptive solver"),
        "step-control": _write("the step-size controller"),
        "adaptive-loop": _write("the adaptive integration loop"),
    },
    "03": {
        "pad-zeros": _write("the zero padding of an augmented ODE"),
        "augmented-block": _using_library(
            "the augmented ODE block", "nodecourse.models._augment", "nodecourse.models._blocks.ODEBlock"
        ),
        "classifier": _using_library("the annulus classifier", "nodecourse.models._augment"),
        "train": _using_library("the training loop", "nodecourse.models._augment", "nodecourse.training"),
    },
    "04": {
        "adjoint-dynamics": _write("the adjoint dynamics"),
        "learner-adjoint": _using_library(
            "the adjoint method's backward pass",
            "nodecourse.solvers._adjoint",
            "nodecourse.solvers._checkpoint",
            "nodecourse.solvers._gradient_run",
            "nodecourse.measure._adjoint_sweep",
            *OTHER_LIBRARIES,
        ),
        "flat-memory": _using_library(
            "the memory measurement of your adjoint",
            "nodecourse.solvers._adjoint",
            "nodecourse.solvers._checkpoint",
            "nodecourse.measure._adjoint_sweep",
            *OTHER_LIBRARIES,
        ),
    },
    "05": {
        "masked-update": _write("the masked GRU update"),
        "odernn-step": _using_library("an ODE-RNN step", "nodecourse.models.latent"),
        "odernn-encode": _using_library("the ODE-RNN encoder", "nodecourse.models.latent"),
    },
    "06": {
        "mixing-weights": _write("Anderson's mixing weights"),
        "anderson": _write("Anderson acceleration"),
        "implicit-hook": _using_library(
            "the implicit gradient hook",
            "nodecourse.deq._layer",
            "nodecourse.deq._models",
            "nodecourse.deq._training",
            "torchdeq",
        ),
        "hutchinson": _write("a Hutchinson estimate of the Jacobian's norm"),
    },
    "08": {
        "exact-divergence": _write("the exact divergence"),
        "hutchinson": _write("the Hutchinson divergence estimate"),
        "dynamics": _using_library(
            "the CNF dynamics",
            "nodecourse.models._flows.CNFDynamics",
            "nodecourse.models._flows.CNF",
            "nodecourse.models._flows.divergence_exact",
            "nodecourse.models._flows.divergence_hutchinson",
        ),
        "log-prob": _using_library(
            "the CNF's log-density", "nodecourse.models._flows.CNF", "nodecourse.models._flows.CNFDynamics"
        ),
    },
    "09": {
        name: _using_library(asks, "nodecourse.audit", "nodecourse.measure._gradient_check")
        for name, asks in (
            ("accuracy-at", "the accuracy at a tolerance"),
            ("breaking-tolerance", "the breaking tolerance"),
            ("directional-derivative", "a central finite difference"),
            ("route-error", "a gradient route's error"),
            ("wrong-route", "the wrong gradient route"),
        )
    },
    "10": {
        "kinetic-dynamics": _write("the kinetic-energy dynamics"),
        "heun-step": _write("a reversible Heun step"),
        "heun-inverse": _write("the reversible Heun inverse"),
        "seminorm": _write("the adjoint seminorm"),
    },
    "11": {
        "em-step": _write("an Euler-Maruyama step"),
        "strong-order": _write("the strong-order measurement of Euler-Maruyama"),
        "cde-contract": _write("the CDE vector field's contraction"),
        "path-change": _using_library("the change of an interpolated path"),
    },
}

# The other libraries' solvers, disabled while a task that a solver would answer runs.
_TORCHDIFFEQ = (
    "torchdiffeq._impl.odeint:odeint",
    "torchdiffeq._impl.odeint:odeint_event",
    "torchdiffeq._impl.odeint:odeint_dense",
    "torchdiffeq._impl.adjoint:odeint_adjoint",
)
_TORCHDEQ = (
    "torchdeq.solver.anderson:anderson_solver",
    "torchdeq.solver.broyden:broyden_solver",
    "torchdeq.solver.fp_iter:fixed_point_iter",
    "torchdeq.solver.fp_iter:simple_fixed_point_iter",
)
_ODE_SOLVE = ("nodecourse.solvers:odeint", "nodecourse.solvers._fixed:integrate_fixed", *_TORCHDIFFEQ)
_SDE_SOLVE = (
    "nodecourse.sde._solve:sdeint",
    "nodecourse.sde._solve:integrate",
    "nodecourse.sde._solve:_euler_step",
    "torchsde._core.sdeint:sdeint",
)
_CDE_FIELD = (
    "nodecourse.cde._solve:CDEField.forward",
    "nodecourse.cde._solve:cdeint",
    "torchcde.solver:_VectorField.forward",
    "torchcde.solver:cdeint",
)
_DEQ_SOLVE = (
    "nodecourse.deq._anderson:anderson",
    "nodecourse.deq._anderson:anderson_weights",
    "nodecourse.deq._fixed_point:fixed_point",
    *_TORCHDEQ,
)

# A task whose judge already checks the work itself (the adaptive loop's counts against the evaluations
# the grader counted, the Hutchinson estimate on the grader's probes) keeps only the static refusal for
# what else would answer it: its judge names a made-up answer more precisely than a refusal would.
RUN_TIME: dict[str, dict[str, tuple[str, ...]]] = {
    "01": {"euler-step": _ODE_SOLVE, "euler-integrate-matches": _ODE_SOLVE, "euler-order": _ODE_SOLVE},
    "02": {
        "rk4-step-matches": _ODE_SOLVE,
        "rk4-order": _ODE_SOLVE,
        "error-norm": ("nodecourse.solvers._control:error_scale", "nodecourse.solvers._control:rms"),
    },
    "06": {
        "mixing-weights": _DEQ_SOLVE,
        "anderson": _DEQ_SOLVE,
        "hutchinson": ("nodecourse.deq._regularizer:jacobian_regularizer",),
    },
    "08": {
        "exact-divergence": ("nodecourse.models._flows:divergence_exact",),
        "hutchinson": ("nodecourse.models._flows:divergence_hutchinson",),
    },
    "10": {
        check: (
            "nodecourse.solvers._reversible:heun_step",
            "nodecourse.solvers._reversible:heun_inverse",
            "nodecourse.solvers._reversible:integrate",
            *_TORCHDIFFEQ,
        )
        for check in ("heun-step", "heun-solve", "heun-inverse", "heun-roundtrip")
    },
    "11": {
        **dict.fromkeys(("em-step", "em-order"), _SDE_SOLVE),
        **dict.fromkeys(("cde-contract", "cde-solve"), _CDE_FIELD),
    },
}


def exercise_of(module_name: str) -> str:
    """The exercise key of a task module's name ("nodecourse.course.tasks.ex06" -> "06"; "" otherwise)."""
    prefix = "nodecourse.course.tasks.ex"
    tail = module_name[len(prefix) :] if module_name.startswith(prefix) else ""
    return tail if len(tail) == 2 and tail.isdigit() else ""


def run_time(exercise: str, check: str) -> tuple[str, ...]:
    """The functions disabled while check ``check`` of exercise ``exercise`` runs (may be empty)."""
    return RUN_TIME.get(exercise, {}).get(check, ())


def reach_for(exercise: str, answer: str) -> Reach | None:
    """The declared reach of one answer cell (None: an exercise or answer this table does not know)."""
    return ANSWERS.get(exercise, {}).get(answer)
