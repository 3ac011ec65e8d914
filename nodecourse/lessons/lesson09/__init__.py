"""Lesson 9: audit your model. The course's models, two planted faults, and the sentences the lesson shows.

The audit itself is library code (:mod:`nodecourse.audit`); this package holds what the lesson and
``nodecourse audit --model NAME`` run it on:

- :mod:`.config`: the course models' names and the PhysioNet shift split (ICU units, quick sizes);
- :mod:`.models`: the course's three models trained as the lesson audits them (:func:`course_model`);
- :mod:`.faults`: two planted faults with known answers (:func:`rotating_classifier`,
  :func:`long_horizon_regressor`), built from :mod:`nodecourse.models.linear`;
- :mod:`.studies`: the work a fixed-step ODE-RNN solve should do (:func:`step_budget`);
- :mod:`.findings`: the lesson's sentences, chosen from the measurements.

The lesson has no ledger row of its own (its measurements are the audit's verdicts), so there is no
``rows`` module.
"""

from nodecourse.lessons.lesson09.config import (
    COURSE_MODELS,
    ICU_NAMES,
    PHYSIONET_EPOCHS,
    PHYSIONET_HIDDEN,
    PHYSIONET_QUICK_PATIENTS,
    PHYSIONET_QUICK_SHIFT,
    SHIFT_ICU_TYPE,
    TRAIN_ICU_TYPES,
)
from nodecourse.lessons.lesson09.faults import long_horizon_regressor, rotating_classifier
from nodecourse.lessons.lesson09.findings import (
    AuditDataFindings,
    BaselineFindings,
    FoundSolve,
    MdeqFindings,
    RouteFindings,
    ShiftFindings,
    StepSummaries,
    VerdictTable,
    WorkFindings,
)
from nodecourse.lessons.lesson09.models import (
    CourseModel,
    course_model,
    digits_model,
    icu_types,
    physionet_model,
    physionet_shift_split,
    rows_of,
)
from nodecourse.lessons.lesson09.studies import StepBudget, step_budget
from nodecourse.models.linear import LinearField, Readout, Rotation

__all__ = [
    "COURSE_MODELS",
    "ICU_NAMES",
    "PHYSIONET_EPOCHS",
    "PHYSIONET_HIDDEN",
    "PHYSIONET_QUICK_PATIENTS",
    "PHYSIONET_QUICK_SHIFT",
    "SHIFT_ICU_TYPE",
    "TRAIN_ICU_TYPES",
    "BaselineFindings",
    "CourseModel",
    "AuditDataFindings",
    "FoundSolve",
    "LinearField",
    "MdeqFindings",
    "Readout",
    "Rotation",
    "RouteFindings",
    "ShiftFindings",
    "StepBudget",
    "StepSummaries",
    "VerdictTable",
    "WorkFindings",
    "course_model",
    "digits_model",
    "icu_types",
    "long_horizon_regressor",
    "physionet_model",
    "physionet_shift_split",
    "rotating_classifier",
    "rows_of",
    "step_budget",
]
