"""Lesson 3 (what a flow cannot represent): studies, findings and ledger rows.

Notebooks and tests use ``from nodecourse.lessons import lesson03 as L``; importing the package registers the
rows (``rows``) with :mod:`nodecourse.claims`. Modules: ``config`` (configurations and thresholds, declared
before anything runs), ``bounds`` (computed bounds and the helpers that judge against them), ``studies``
(cached training runs), ``findings`` (judged results with ``markdown()``) and ``rows``.
"""

from nodecourse.lessons.lesson03 import bounds, config, findings, rows, studies
from nodecourse.lessons.lesson03.bounds import *  # noqa: F403
from nodecourse.lessons.lesson03.config import *  # noqa: F403
from nodecourse.lessons.lesson03.findings import *  # noqa: F403
from nodecourse.lessons.lesson03.rows import *  # noqa: F403
from nodecourse.lessons.lesson03.studies import *  # noqa: F403

__all__ = [*bounds.__all__, *config.__all__, *findings.__all__, *rows.__all__, *studies.__all__, "rows"]
