"""Interactive explorers (ipywidgets) used by the lessons.

Each explorer keeps the result of its last update on the object, so its
callbacks can be driven headless in tests: build it, set a control's
``.value``, read ``.result``.

The five explorers the lessons show are exported here, so a lesson (or a
learner) imports them from one place: ``from nodecourse.widgets import AdjointExplorer``.
"""

from nodecourse.widgets.adjoint_explorer import AdjointExplorer
from nodecourse.widgets.annulus import AnnulusExplorer
from nodecourse.widgets.cheaper_explorer import CheaperExplorer
from nodecourse.widgets.deq_explorer import DEQExplorer
from nodecourse.widgets.solver_explorer import PROBLEMS, ExplorerResult, SolverExplorer, run_solver

__all__ = [
    "AdjointExplorer",
    "AnnulusExplorer",
    "CheaperExplorer",
    "DEQExplorer",
    "PROBLEMS",
    "ExplorerResult",
    "SolverExplorer",
    "run_solver",
]
