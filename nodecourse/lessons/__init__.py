"""The code each lesson notebook calls, one module per lesson, with its claims-ledger rows.

Notebooks import their lesson as ``from nodecourse.lessons import lesson03 as L``.
Importing a module registers its rows with :mod:`nodecourse.claims`.
"""

# Each lessonNN module is imported by name (the ledger finds them at run time): nothing here.
__all__: list[str] = []
