"""Lesson 9: audit your model. The course's models, two planted faults, and the sentences the lesson shows.

The audit itself is library code (:mod:`nodecourse.audit`); this package holds what the lesson and
``nodecourse audit --model NAME`` run it on:

- :mod:`.config`: the course models' names and the PhysioNet shift split (ICU units, quick sizes);
- :mod:`.models`: the course's three models trained as the lesson audits them (:func:`course_model`);
- :mod:`.faults`: two planted faults with known answers (:func:`rotating_classifier`,
  :func:`long_horizon_regressor`), built from :mod:`nodecourse.models._linear`;
- :mod:`.studies`: the work a fixed-step ODE-RNN solve should do (:func:`step_budget`);
- :mod:`.findings`: the lesson's sentences, chosen from the measurements.

The lesson has no ledger row of its own (its measurements are the audit's verdicts), so there is no
``rows`` module.
"""

from nodecourse.lessons.lesson09 import config, faults, findings, models, studies
from nodecourse.lessons.lesson09.config import *  # noqa: F403
from nodecourse.lessons.lesson09.faults import *  # noqa: F403
from nodecourse.lessons.lesson09.findings import *  # noqa: F403
from nodecourse.lessons.lesson09.models import *  # noqa: F403
from nodecourse.lessons.lesson09.studies import *  # noqa: F403

__all__ = [*config.__all__, *faults.__all__, *findings.__all__, *models.__all__, *studies.__all__]
