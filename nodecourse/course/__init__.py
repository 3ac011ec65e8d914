"""The course machinery: CLI, grader, exercise builder, environment check, check helpers, paths.

Nothing in the library (``nodecourse.solvers``, models, data, ...) imports
from here; see CONTRIBUTING.md for the direction imports may go.

Its surface is the ``nodecourse`` command (:mod:`~nodecourse.course.cli`) and, for the exercise
notebooks, :mod:`~nodecourse.course.checks` and :func:`nodecourse.course.tasks.self_check`.
"""

__all__ = ["checks", "tasks"]
