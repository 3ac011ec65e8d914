"""The explorers are part of the library's surface: every explorer class in ``nodecourse/widgets/``
(and every one a lesson, exercise or solution imports) is exported by ``nodecourse.widgets``."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import re

import nodecourse.widgets as widgets
from nodecourse.widgets._base import FigureExplorer
from notebook_fixtures import REPO

_IMPORT = re.compile(r"from nodecourse\.widgets(?:\.\w+)? import ([\w, ]+)")


def _explorer_classes() -> dict[str, type]:
    found = {}
    for info in pkgutil.iter_modules(widgets.__path__, "nodecourse.widgets."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, FigureExplorer) and obj is not FigureExplorer:
                if obj.__module__ == info.name:
                    found[name] = obj
    return found


def _names_the_course_imports() -> set[str]:
    names = set()
    for folder in ("notebooks", "exercises", "solutions"):
        for path in (REPO / folder).glob("*.ipynb"):
            for cell in json.loads(path.read_text())["cells"]:
                for match in _IMPORT.finditer("".join(cell["source"])):
                    names |= {n.strip() for n in match.group(1).split(",") if n.strip()}
    return names


def test_every_explorer_class_is_exported_from_the_package():
    classes = _explorer_classes()
    assert len(classes) >= 5, sorted(classes)  # the five explorers the lessons show
    for name, cls in classes.items():
        assert name in widgets.__all__, f"nodecourse.widgets does not export {name}"
        assert getattr(widgets, name) is cls


def test_every_explorer_a_lesson_imports_comes_from_the_package():
    imported = {n for n in _names_the_course_imports() if n.endswith("Explorer")}
    assert {"SolverExplorer", "AdjointExplorer", "DEQExplorer", "AnnulusExplorer", "CheaperExplorer"} <= imported
    for name in imported:
        assert name in widgets.__all__, f"a lesson imports {name}, which nodecourse.widgets does not export"
        assert inspect.isclass(getattr(widgets, name)), name
