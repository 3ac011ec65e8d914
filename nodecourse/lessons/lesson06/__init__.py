"""Lesson 6 (deep equilibrium models): its sizes (:mod:`.config`), studies (:mod:`.studies`), findings
(:mod:`.findings`) and ledger rows (:mod:`.rows`, registered on import).

The lesson calls the same cached studies to draw its figures that the rows judge, so the rows it shows come
from the very runs it plots.
"""

from nodecourse.lessons.lesson06 import config, findings, ratios, rows, studies
from nodecourse.lessons.lesson06.config import *  # noqa: F403
from nodecourse.lessons.lesson06.findings import *  # noqa: F403
from nodecourse.lessons.lesson06.ratios import *  # noqa: F403
from nodecourse.lessons.lesson06.rows import *  # noqa: F403
from nodecourse.lessons.lesson06.studies import *  # noqa: F403

__all__ = [*config.__all__, *findings.__all__, *ratios.__all__, *rows.__all__, *studies.__all__, "rows"]
