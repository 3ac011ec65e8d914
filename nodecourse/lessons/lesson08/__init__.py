"""Lesson 8 (continuous normalising flows): the studies the notebook draws, its findings, and its ledger row.

- :mod:`.config`: the Hutchinson study's and the two-moons flow's settings (quick and full), the row's slacks;
- :mod:`.studies`: the change of variables on fields with a known answer, Hutchinson's estimator, the
  trace's cost, the two-moons CNF;
- :mod:`.findings`: what the lesson's sentences say, chosen from the measurements;
- :mod:`.rows`: the ledger row ``cnf-hutchinson-variance``.
"""

from nodecourse.lessons.lesson08 import config, findings, rows, studies
from nodecourse.lessons.lesson08.config import *  # noqa: F403
from nodecourse.lessons.lesson08.findings import *  # noqa: F403
from nodecourse.lessons.lesson08.rows import *  # noqa: F403
from nodecourse.lessons.lesson08.studies import *  # noqa: F403

__all__ = [*config.__all__, *findings.__all__, *rows.__all__, *studies.__all__, "rows"]
