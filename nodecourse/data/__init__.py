"""Data for the lessons.

The toy sets are generated here (seeded, sizes as arguments). The larger sets
live in submodules imported on demand, so ``import nodecourse.data`` stays light:
``nodecourse.data.digits`` and ``nodecourse.data.physionet``.
"""

from nodecourse.data.toy import ANNULUS_RADII, annulus, annulus_label, negation, one_d_crossing

# ``digits`` and ``physionet`` are modules imported by name.
__all__ = ["ANNULUS_RADII", "annulus", "annulus_label", "digits", "negation", "one_d_crossing", "physionet"]
