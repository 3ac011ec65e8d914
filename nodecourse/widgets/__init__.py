"""Interactive explorers (ipywidgets) used by the lessons.

Each explorer keeps the result of its last update on the object, so its
callbacks can be driven headless in tests: build it, set a control's
``.value``, read ``.result``.

The five explorers the lessons show are exported here, so a lesson (or a
learner) imports them from one place: ``from nodecourse.widgets import AdjointExplorer``.

This file is the package's surface. The modules behind it are private: one per explorer
(``_solver_explorer``, ``_adjoint_explorer``, ``_annulus``, ``_deq_explorer``, ``_cheaper_explorer``),
``_base`` (the figure explorer they share) and ``_common`` (their controls and layout).
"""

from nodecourse.widgets import _adjoint_explorer, _annulus, _cheaper_explorer, _deq_explorer, _solver_explorer
from nodecourse.widgets._adjoint_explorer import *  # noqa: F403
from nodecourse.widgets._annulus import *  # noqa: F403
from nodecourse.widgets._cheaper_explorer import *  # noqa: F403
from nodecourse.widgets._deq_explorer import *  # noqa: F403
from nodecourse.widgets._solver_explorer import *  # noqa: F403

__all__ = [
    *_adjoint_explorer.__all__,
    *_annulus.__all__,
    *_cheaper_explorer.__all__,
    *_deq_explorer.__all__,
    *_solver_explorer.__all__,
]
