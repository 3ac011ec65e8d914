"""Lesson 1 (ResNet as Euler): the comparison study, its findings and the ``resnet-euler`` ledger row.

Notebooks and tests use ``from nodecourse.lessons import lesson01 as L``; importing the package registers
the row (``rows``) with :mod:`nodecourse.claims`.
"""

from nodecourse.lessons.lesson01 import rows
from nodecourse.lessons.lesson01.config import BASELINE_FACTOR, QUICK, ULPS, ResnetEulerConfig
from nodecourse.lessons.lesson01.findings import ResnetEulerFindings, resnet_euler_findings
from nodecourse.lessons.lesson01.studies import ResnetEulerComparison, resnet_vs_euler

measure = rows.measure

__all__ = [
    "BASELINE_FACTOR",
    "QUICK",
    "ULPS",
    "ResnetEulerComparison",
    "ResnetEulerConfig",
    "ResnetEulerFindings",
    "measure",
    "resnet_euler_findings",
    "resnet_vs_euler",
    "rows",
]
