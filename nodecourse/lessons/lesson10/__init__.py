"""Lesson 10 (cheaper and exact): regularised dynamics, the seminorm adjoint, reversible Heun.

- :mod:`~nodecourse.lessons.lesson10.config`: the thresholds (declared before anything is measured) and
  the frozen study sizes, quick and full;
- :mod:`~nodecourse.lessons.lesson10.studies`: the measurements, each a cached study returning typed results;
- :mod:`~nodecourse.lessons.lesson10.findings`: what the lesson's paragraphs quote, rendered by ``markdown()``;
- :mod:`~nodecourse.lessons.lesson10.plots`: the figures;
- :mod:`~nodecourse.lessons.lesson10.rows`: the ledger rows ``ode-nfe-growth``, ``kinetic-regularization-nfe``,
  ``seminorm-backward-nfe``, ``reversible-gradient-exact``, ``reversible-memory-flat`` (registered on import).
"""

# rows registers the ledger rows on import
from nodecourse.lessons.lesson10 import config, findings, plots, rows, studies  # noqa: F401
from nodecourse.lessons.lesson10.config import *  # noqa: F403
from nodecourse.lessons.lesson10.findings import *  # noqa: F403
from nodecourse.lessons.lesson10.plots import *  # noqa: F403
from nodecourse.lessons.lesson10.studies import *  # noqa: F403

__all__ = [*config.__all__, *findings.__all__, *plots.__all__, *studies.__all__]
