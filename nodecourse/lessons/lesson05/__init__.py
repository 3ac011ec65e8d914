"""Lesson 5: latent ODEs on PhysioNet 2012, ODE-RNN beside its discrete baselines.

- :mod:`.config`: the published figures, thresholds (declared before anything runs) and study configs;
- :mod:`.studies`: what measures (the AUC study, the learning curve, pitfall 1), each cached;
- :mod:`.judging`: levels by 95 % seed intervals, gaps against the ranges of the published gaps;
- :mod:`.findings`: what the lesson's sentences quote, rendering its own Markdown;
- :mod:`.rows`: the ledger rows ``physionet-auc`` and ``physionet-gru-d``;
- :mod:`.curve`: the learning curve over patients of set A (``python -m nodecourse.lessons.lesson05.curve``;
  not imported here, so that ``-m`` runs it cleanly).
"""

from nodecourse.lessons.lesson05 import config, findings, judging, rows, studies  # rows: the ledger registers its rows
from nodecourse.lessons.lesson05.config import *  # noqa: F403
from nodecourse.lessons.lesson05.findings import *  # noqa: F403
from nodecourse.lessons.lesson05.judging import *  # noqa: F403
from nodecourse.lessons.lesson05.rows import *  # noqa: F403
from nodecourse.lessons.lesson05.studies import *  # noqa: F403

# The curve's names (its ``__all__``) load its module on first use (PEP 562): importing it here would make
# `python -m nodecourse.lessons.lesson05.curve` find the module already imported by its package.
_CURVE_NAMES = (
    "COURSE_CURVE",
    "FULL_CURVE",
    "LESSON_QUICK_CURVE",
    "QUICK_CURVE",
    "CurveCache",
    "CurveConfig",
    "CurveFitsFailed",
    "learning_curve",
)

__all__ = [*_CURVE_NAMES, *config.__all__, *findings.__all__, *judging.__all__, *rows.__all__, *studies.__all__]


def __getattr__(name: str):
    if name in _CURVE_NAMES:
        from nodecourse.lessons.lesson05 import curve

        return getattr(curve, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
