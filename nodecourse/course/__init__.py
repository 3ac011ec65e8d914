"""The course machinery: CLI, grader, exercise builder, environment check, check helpers, paths.

Nothing in the library (``nodecourse.solvers``, models, data, ...) imports
from here; see CONTRIBUTING.md for the direction imports may go.
"""
