"""Lesson 7 (capstone): four ways to spend depth on one task, measured side by side.

One task (scikit-learn's digits), one frame: embed the 64 pixels into a ``width``-dimensional state, transform
the state, read out 10 logits. Only the middle differs (:class:`nodecourse.models.DepthClassifier`):

- ``ResNet``: ``blocks`` explicit residual blocks ``z <- z + g_k(z)``, each its own MLP;
- ``Neural ODE``: one field ``dz/dt = g(z)`` on ``[0, 1]``, dopri5, trained with the adjoint;
- ``DEQ``: one block, ``z* = g(z*) + x`` solved by Anderson acceleration, implicit backward;
- ``Unrolled``: the same block iterated a fixed ``k`` times from ``z = 0``, backprop through all.

The three single-block models have one MLP whose hidden width matches the ResNet's parameter count
(:func:`nodecourse.models.matched_field_width`). The package: sizes (:mod:`.config`), thresholds
(:mod:`.thresholds`), cached studies (:mod:`.studies`: :func:`capstone_study` trains every model on every seed;
the measurements after training reuse the trained models), findings (:mod:`.findings`) and the ledger rows
(:mod:`.rows`, registered on import; :data:`ROW_IDS`).
"""

from nodecourse.lessons.lesson07 import config, findings, rows, studies, thresholds
from nodecourse.lessons.lesson07.config import *  # noqa: F403
from nodecourse.lessons.lesson07.findings import *  # noqa: F403
from nodecourse.lessons.lesson07.rows import *  # noqa: F403
from nodecourse.lessons.lesson07.studies import *  # noqa: F403
from nodecourse.lessons.lesson07.thresholds import *  # noqa: F403
from nodecourse.models import DepthClassifier, DEQCore, InjectedBlock, ODECore, UnrolledCore

__all__ = [
    *config.__all__,
    *findings.__all__,
    *rows.__all__,
    *studies.__all__,
    *thresholds.__all__,
    "DEQCore",
    "DepthClassifier",
    "InjectedBlock",
    "ODECore",
    "UnrolledCore",
    "rows",
]
