"""Data for the lessons.

The toy sets are generated here (seeded, sizes as arguments). The larger sets load on demand, so
``import nodecourse.data`` stays light: the digits (:func:`load_digits`, imported on first use) and
the PhysioNet 2012 package ``nodecourse.data.physionet``.

This file is the package's surface: import from ``nodecourse.data`` (and ``nodecourse.data.physionet``).
The modules behind it are private (``_toy``: the toy sets; ``_digits``: the digits).
"""

from nodecourse import _lazy
from nodecourse.data import _toy
from nodecourse.data._toy import *  # noqa: F403

# The digits, imported on first use (PEP 562): ``{name: private module}``.
_LAZY = {"N_CLASSES": "._digits", "N_FEATURES": "._digits", "DigitsSplit": "._digits", "load_digits": "._digits"}

__getattr__, __dir__ = _lazy(__name__, _LAZY)

# ``physionet`` is a subpackage imported by name.
__all__ = [*_toy.__all__, *_LAZY, "physionet"]  # noqa: F405
