"""Old import paths of modules that moved into subpackages keep working for one release.

``import nodecourse.memory`` (and ``from nodecourse import memory``) still gives the module,
now at ``nodecourse.measure.memory``, with a :class:`DeprecationWarning` naming the new path.
A finder on :data:`sys.meta_path` answers only for the names in :data:`MOVED`; the module it
returns is the new module itself, so classes, functions and module state are shared.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old dotted name -> new dotted name (remove an entry one release after its move).
MOVED = {
    "nodecourse.augment": "nodecourse.models.augment",
    "nodecourse.latent": "nodecourse.models.latent",
    "nodecourse.flows": "nodecourse.models.flows",
    "nodecourse.memory": "nodecourse.measure.memory",
    "nodecourse.gradient_check": "nodecourse.measure.gradient_check",
    "nodecourse.diagnostics": "nodecourse.measure.diagnostics",
    "nodecourse.probes": "nodecourse.measure.probes",
    "nodecourse.problems": "nodecourse.measure.problems",
    "nodecourse.deq.memory": "nodecourse.measure.memory",
    "nodecourse.solve_config": "nodecourse.solvers.solve_config",
}

REMOVED_IN = "0.3"


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names in :data:`MOVED` and loads them as the new modules."""

    def __init__(self):
        self._specs: dict = {}  # new name -> the new module's own spec

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import it from there (the old path goes in "
                      f"nodecourse {REMOVED_IN})", DeprecationWarning, stacklevel=2)  # warnings skips importlib's own frames
        module = importlib.import_module(new)
        self._specs[new] = module.__spec__
        return module

    def exec_module(self, module):
        # The import system set the alias's spec on the module it got back (the new module itself,
        # whose other attributes it leaves alone): put the module's own spec back.
        module.__spec__ = self._specs[MOVED[module.__spec__.name]]


def install() -> None:
    """Put the finder on ``sys.meta_path`` once."""
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
