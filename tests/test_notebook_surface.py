"""Lessons, exercises and solutions import only the library's public surface.

A module is public when it is a package of ``nodecourse`` or a root module (``nodecourse.config``), or
when its parent's ``__all__`` names it (``nodecourse.plotting.annulus``, ``nodecourse.lessons.lesson05``);
a name is public when its module's ``__all__`` holds it. Anything else may change without notice
(docs/library.md, "Library surface"), so a notebook that reaches past the surface breaks when the internals move.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p for folder in ("notebooks", "exercises", "solutions") for p in (REPO / folder).glob("*.ipynb"))


def _code(cell_source: str) -> str:
    # IPython's magics and shell escapes are not Python; the imports never sit on those lines.
    return "\n".join(line for line in cell_source.splitlines() if not line.lstrip().startswith(("%", "!")))


def library_imports(path: Path) -> list[tuple[str, str | None, int]]:
    """``(module, name or None, cell index)`` for every ``nodecourse`` import in a notebook's code cells."""
    found = []
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(_code(cell.source))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nodecourse":
                found += [(node.module, alias.name, index) for alias in node.names]
            elif isinstance(node, ast.Import):
                found += [(a.name, None, index) for a in node.names if a.name.split(".")[0] == "nodecourse"]
    return found


def is_public_module(dotted: str) -> bool:
    parts = dotted.split(".")
    if len(parts) <= 2:
        return not any(p.startswith("_") for p in parts)
    parent = importlib.import_module(".".join(parts[:-1]))
    return is_public_module(parent.__name__) and parts[-1] in getattr(parent, "__all__", ())


def surface_problem(module: str, name: str | None) -> str | None:
    """Why ``from module import name`` (or ``import module``) reaches past the surface; None if it does not."""
    if not is_public_module(module):
        return f"{module} is not public: import from the package that exports it"
    if name is None or name == "*":
        return None
    exported = getattr(importlib.import_module(module), "__all__", None)
    if exported is None:
        return f"{module} declares no __all__"
    if name not in exported:
        return f"{module}.__all__ does not hold {name}"
    return None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_notebook_imports_only_public_names(path):
    problems = [
        f"cell {index}: from {module} import {name}: {why}"
        for module, name, index in library_imports(path)
        if (why := surface_problem(module, name))
    ]
    assert not problems, "\n".join(problems)


def test_the_surface_rule_can_fail():
    """The rule refuses the deep imports notebooks once used, and accepts their public spellings."""
    assert surface_problem("nodecourse.widgets._adjoint_explorer", "AdjointExplorer")
    assert surface_problem("nodecourse.lessons.lesson05.curve", "FULL_CURVE")
    assert surface_problem("nodecourse.deq", "not_a_name")
    assert surface_problem("nodecourse.widgets", "AdjointExplorer") is None
    assert surface_problem("nodecourse.lessons.lesson05", "FULL_CURVE") is None
    assert surface_problem("nodecourse.measure._memory", "measure_peak")  # a private module
    assert surface_problem("nodecourse.measure", "measure_peak") is None
    assert surface_problem("nodecourse.config", "pick") is None


def test_notebooks_were_found():
    assert len([p for p in NOTEBOOKS if p.parent.name == "notebooks"]) >= 11
