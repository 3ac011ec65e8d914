"""A findings class name means one thing: no two lessons define a ``Findings`` subclass of the same name
(``GrowthFindings`` in lessons 6 and 10 once read the same in a notebook and meant different studies)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections import defaultdict

import nodecourse.lessons
from nodecourse.lessons.study import Findings


def _findings_classes() -> dict[str, set[str]]:
    """Class name -> the lesson modules that define a Findings subclass of that name."""
    where: dict[str, set[str]] = defaultdict(set)
    for info in pkgutil.walk_packages(nodecourse.lessons.__path__, prefix="nodecourse.lessons."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and issubclass(obj, Findings) and obj.__module__ == module.__name__:
                where[name].add(module.__name__)
    return where


def test_the_walk_finds_the_findings_of_every_lesson():
    lessons = {m.split(".")[2] for mods in _findings_classes().values() for m in mods}
    assert {"lesson04", "lesson06", "lesson09", "lesson10", "lesson11"} <= lessons


def test_no_findings_class_name_is_defined_in_two_modules():
    reused = {name: sorted(mods) for name, mods in _findings_classes().items() if len(mods) > 1}
    assert not reused, f"findings class names defined in more than one module (rename one): {reused}"
