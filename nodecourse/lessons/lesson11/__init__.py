"""Lesson 11 (beyond ODEs): controlled and stochastic differential equations.

The CDE half:

- :mod:`~nodecourse.lessons.lesson11.config`: the ``ncde-vs-odernn`` threshold (declared before anything is
  measured) and the frozen study sizes, quick and full (lesson 5's own studies);
- :mod:`~nodecourse.lessons.lesson11.cde_studies`: the interpolation's causality, the neural CDE model and its
  training, and the study beside lesson 5's models, each a cached study returning typed results;
- :mod:`~nodecourse.lessons.lesson11.cde_findings`: what the lesson's paragraphs quote, rendered by
  ``markdown()``, with the figures;
- :mod:`~nodecourse.lessons.lesson11.cde_rows`: the ledger row ``ncde-vs-odernn`` (registered on import).

The SDE half: the modules ``sde_config``, ``sde_studies``, ``sde_findings`` and ``sde_rows`` (its rows,
registered on import), imported by name (``from nodecourse.lessons.lesson11 import sde_studies``); and the
latent SDE beside a latent ODE, ``latent_sde_models``, ``latent_sde_studies`` and ``latent_sde_findings`` (no
ledger row), imported by name as well.
"""

# the rows modules register the ledger rows on import
from nodecourse.lessons.lesson11 import (
    cde_findings,
    cde_rows,
    cde_studies,
    config,
    latent_sde_findings,
    latent_sde_models,
    latent_sde_studies,
    sde_config,
    sde_findings,
    sde_rows,
    sde_studies,
)
from nodecourse.lessons.lesson11.cde_findings import *  # noqa: F403
from nodecourse.lessons.lesson11.cde_rows import *  # noqa: F403
from nodecourse.lessons.lesson11.cde_studies import *  # noqa: F403
from nodecourse.lessons.lesson11.config import *  # noqa: F403

__all__ = [
    *config.__all__,
    *cde_findings.__all__,
    *cde_rows.__all__,
    *cde_studies.__all__,
    # the SDE half's modules, imported by name
    "latent_sde_findings",
    "latent_sde_models",
    "latent_sde_studies",
    "sde_config",
    "sde_findings",
    "sde_rows",
    "sde_studies",
]
