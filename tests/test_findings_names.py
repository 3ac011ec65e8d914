"""A findings class name means one thing: no two lessons define a ``Findings`` subclass of the same name
(``GrowthFindings`` in lessons 6 and 10 once read the same in a notebook and meant different studies)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
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


def _returns_findings(fn) -> bool:
    """Whether ``fn``'s return annotation names a findings class (annotations are strings here)."""
    annotation = inspect.signature(fn).return_annotation
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return name.split(".")[-1].split("[")[0].endswith("Findings")


def constructor_problems(module) -> list[str]:
    """What in ``module`` breaks the convention: a findings object is built by a classmethod of its
    class named ``from_<what it is built from>`` (``AbsFindings.from_study(study)``), never by a
    module-level function or a classmethod of another name (``.of``, ``.measure``)."""
    problems = []
    for name, obj in vars(module).items():
        if getattr(obj, "__module__", None) != module.__name__ or name.startswith("_"):
            continue
        if inspect.isfunction(obj) and (name.endswith("_findings") or _returns_findings(obj)):
            problems.append(f"{module.__name__}.{name}(): a module-level findings constructor")
        if inspect.isclass(obj) and issubclass(obj, Findings):
            for attr, raw in vars(obj).items():
                if isinstance(raw, classmethod) and not attr.startswith(("from_", "_")):
                    problems.append(f"{module.__name__}.{name}.{attr}(): a constructor not named from_<input>")
    return problems


def _lesson_modules():
    for info in pkgutil.walk_packages(nodecourse.lessons.__path__, prefix="nodecourse.lessons."):
        yield importlib.import_module(info.name)


def test_every_findings_object_is_built_by_a_from_classmethod():
    problems = [p for module in _lesson_modules() for p in constructor_problems(module)]
    assert not problems, "build findings with XFindings.from_<input>(...): " + "; ".join(problems)


def test_the_convention_check_finds_each_way_of_breaking_it():
    module = types.ModuleType("nodecourse.lessons.example")

    class ExampleFindings(Findings):
        @classmethod
        def of(cls, study):
            return cls()

        @classmethod
        def from_study(cls, study):
            return cls()

    def example_findings(study):
        return ExampleFindings()

    def judge(study) -> ExampleFindings:
        return ExampleFindings()

    for obj in (ExampleFindings, example_findings, judge):
        obj.__module__ = module.__name__
        setattr(module, obj.__name__, obj)
    problems = constructor_problems(module)
    assert len(problems) == 3, problems
    assert any(".ExampleFindings.of()" in p for p in problems)
    assert any(".example_findings()" in p for p in problems)
    assert any(".judge()" in p for p in problems)
