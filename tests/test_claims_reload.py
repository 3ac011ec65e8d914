"""The claim registry survives a reload of a lesson's ``rows`` module (``importlib.reload``, IPython's
``%autoreload``): the row is defined again and replaces itself. An id taken by another module, or by
another function of the same module, still raises."""

from __future__ import annotations

import importlib

import pytest

from nodecourse.claims import Threshold, claim
from nodecourse.claims._registry import REGISTRY

ROW_ID = "resnet-euler"  # lesson 1's row, nodecourse/lessons/lesson01/rows.py


@pytest.fixture
def registry_restored():
    rows = importlib.import_module("nodecourse.lessons.lesson01.rows")
    saved = dict(REGISTRY)
    yield rows
    REGISTRY.clear()
    REGISTRY.update(saved)


def _register_again(measure_name: str, module: str):
    def measure(quick: bool):  # pragma: no cover - never run, only registered
        raise AssertionError("not run")

    measure.__module__, measure.__qualname__ = module, measure_name
    spec = REGISTRY[ROW_ID]
    threshold = Threshold("x", kind="course", why="a test row")
    return claim(id=ROW_ID, claim=spec.claim, source="s", published="p", lesson="01", threshold=threshold)(measure)


def test_importlib_reload_of_a_rows_module_replaces_its_rows(registry_restored):
    rows = registry_restored
    before = REGISTRY[ROW_ID].measure
    reloaded = importlib.reload(rows)
    assert REGISTRY[ROW_ID].measure is reloaded.measure
    assert REGISTRY[ROW_ID].measure is not before  # the new definition, not the stale one


def test_ipython_autoreload_of_a_rows_module_does_not_raise(registry_restored):
    autoreload = pytest.importorskip("IPython.extensions.autoreload")
    rows = registry_restored
    autoreload.superreload(rows)  # what %autoreload 2 runs on a changed module
    assert REGISTRY[ROW_ID].measure.__module__ == rows.__name__


def test_the_same_id_from_another_module_still_raises(registry_restored):
    with pytest.raises(ValueError, match=r"claim id 'resnet-euler' is registered twice: by .*lesson01\.rows\.measure"):
        _register_again("measure", "nodecourse.lessons.lesson99.rows")


def test_the_same_id_from_another_function_of_the_same_module_still_raises(registry_restored):
    with pytest.raises(ValueError, match="give one of the rows another id"):
        _register_again("measure_copy", "nodecourse.lessons.lesson01.rows")
