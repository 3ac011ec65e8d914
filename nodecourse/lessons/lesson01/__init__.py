"""Lesson 1 (ResNet as Euler): the comparison study, its findings and the ``resnet-euler`` ledger row.

Notebooks and tests use ``from nodecourse.lessons import lesson01 as L``; importing the package registers
the row (``rows``) with :mod:`nodecourse.claims`.
"""

from nodecourse.lessons.lesson01 import config, findings, rows, studies
from nodecourse.lessons.lesson01.config import *  # noqa: F403
from nodecourse.lessons.lesson01.findings import *  # noqa: F403
from nodecourse.lessons.lesson01.rows import *  # noqa: F403
from nodecourse.lessons.lesson01.studies import *  # noqa: F403

__all__ = [*config.__all__, *findings.__all__, *rows.__all__, *studies.__all__, "rows"]
