"""Neural controlled differential equations (Kidger et al. 2020).

- paths through irregular, partially observed series (torchcde's conventions and coefficient
  layout): :func:`linear_coeffs` + :class:`LinearInterpolation`, :func:`hermite_cubic_coeffs` and
  :func:`natural_cubic_coeffs` + :class:`CubicSpline`, or :func:`interpolate` for both steps; each
  path has ``evaluate``, ``derivative``, ``interval``, ``grid_points`` and ``causal``
- extra channels: :func:`intensity_channels` (observation counts), :func:`time_channel`
- :func:`cdeint`: ``dz = f(t, z) dX(t)`` solved by :func:`nodecourse.odeint` (:class:`CDEField` is
  its vector field), returning its :class:`~nodecourse.Solution`

This file is the package's surface: import from ``nodecourse.cde``. The modules behind it are
private (``_interpolation``: the paths and channels; ``_solve``: :func:`cdeint` and its field).
"""

from nodecourse.cde import _interpolation, _solve
from nodecourse.cde._interpolation import *  # noqa: F403
from nodecourse.cde._solve import *  # noqa: F403

__all__ = [*_interpolation.__all__, *_solve.__all__]
