"""The code each lesson notebook calls, one package per lesson, with its claims-ledger rows.

A lesson's package has small modules: ``config`` (frozen quick/full settings), ``studies`` (what
measures, each a :func:`~nodecourse.lessons.study.cached_study` returning frozen results),
``findings`` (:class:`~nodecourse.lessons.study.Findings` that render themselves in the notebook)
and ``rows`` (the ledger rows, thin adapters over studies and findings).

Notebooks import their lesson as ``from nodecourse.lessons import lesson03 as L``.
Importing a lesson's package registers its rows with :mod:`nodecourse.claims`.
"""

import pkgutil as _pkgutil

# Each lessonNN package (and ``study``) is imported by name, not imported here: listing them from the
# folder keeps the surface in step with the lessons without loading every lesson on import.
__all__: list[str] = sorted(m.name for m in _pkgutil.iter_modules(__path__))
