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

from nodecourse.lessons.lesson11 import (  # noqa: F401  (the rows modules register the ledger rows)
    cde_rows,
    latent_sde_findings,
    latent_sde_models,
    latent_sde_studies,
    sde_rows,
)
from nodecourse.lessons.lesson11.cde_findings import (
    NAMES,
    CausalityFindings,
    ModelLine,
    NCDEFindings,
    interval_text,
    judge_ncde,
)
from nodecourse.lessons.lesson11.cde_rows import ANALOGUE, analogue_verdict, measure_ncde_vs_odernn
from nodecourse.lessons.lesson11.cde_studies import (
    CausalityResult,
    NCDEStudy,
    NeuralCDE,
    causality_study,
    fit_ncde,
    forward_fill,
    matched_width,
    n_parameters,
    ncde_study,
    physionet_path,
)
from nodecourse.lessons.lesson11.config import (
    CAUSALITY,
    FULL_NCDE_STUDY,
    NCDE_MARGIN,
    NCDE_PAPER_DATA,
    NCDE_THRESHOLD,
    PARAMETER_TOLERANCE,
    QUICK_NCDE_STUDY,
    CausalityConfig,
    NCDEConfig,
)

__all__ = [
    "ANALOGUE",
    "CAUSALITY",
    "FULL_NCDE_STUDY",
    "NAMES",
    "NCDE_MARGIN",
    "NCDE_PAPER_DATA",
    "NCDE_THRESHOLD",
    "PARAMETER_TOLERANCE",
    "QUICK_NCDE_STUDY",
    "CausalityConfig",
    "CausalityFindings",
    "CausalityResult",
    "ModelLine",
    "NCDEConfig",
    "NCDEFindings",
    "NCDEStudy",
    "NeuralCDE",
    "analogue_verdict",
    "causality_study",
    "fit_ncde",
    "forward_fill",
    "interval_text",
    "judge_ncde",
    "matched_width",
    "measure_ncde_vs_odernn",
    "n_parameters",
    "ncde_study",
    "physionet_path",
    # the SDE half's modules, imported by name
    "latent_sde_findings",
    "latent_sde_models",
    "latent_sde_studies",
    "sde_config",
    "sde_findings",
    "sde_rows",
    "sde_studies",
]
