"""Interactive explorers (ipywidgets) used by the lessons.

Each explorer keeps the result of its last update on the object, so its
callbacks can be driven headless in tests: build it, set a control's
``.value``, read ``.result``.
"""

from nodecourse.widgets.solver_explorer import PROBLEMS, ExplorerResult, SolverExplorer, run_solver

__all__ = ["PROBLEMS", "ExplorerResult", "SolverExplorer", "run_solver"]
