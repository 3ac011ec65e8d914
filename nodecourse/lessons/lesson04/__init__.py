"""Lesson 4 (the adjoint, its memory and its instability): studies, findings, figures and ledger rows.

Notebooks and tests use ``from nodecourse.lessons import lesson04 as L``; importing the package registers the
rows (``rows``) with :mod:`nodecourse.claims`. Modules: ``config`` (configurations and thresholds, declared
before anything runs), ``studies`` (cached measurements), ``findings`` (judged results with ``markdown()``),
``figures`` and ``rows``.
"""

from nodecourse.lessons.lesson04 import config, figures, findings, rows, studies
from nodecourse.lessons.lesson04.config import *  # noqa: F403
from nodecourse.lessons.lesson04.figures import *  # noqa: F403
from nodecourse.lessons.lesson04.findings import *  # noqa: F403
from nodecourse.lessons.lesson04.rows import *  # noqa: F403
from nodecourse.lessons.lesson04.studies import *  # noqa: F403

__all__ = [*config.__all__, *figures.__all__, *findings.__all__, *rows.__all__, *studies.__all__, "rows"]
