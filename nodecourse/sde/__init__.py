"""Stochastic differential equations: a seeded Brownian path and fixed-step solvers.

- :class:`BrownianPath`: ``W(s, t)`` for any ``s <= t`` in ``[t0, t1]``, the same path however it is queried.
- :func:`sdeint`: Euler-Maruyama, Milstein (Ito) and reversible Heun (Stratonovich) with torchsde's SDE
  interface (``f``, ``g``, ``noise_type``, ``sde_type``); returns an :class:`SDESolution`. Gradients by
  backprop through the solve, or (``gradient="adjoint"``, Stratonovich SDEs) by the stochastic adjoint.
- :func:`step_times`: the times at which those fixed steps end, per output interval.

This file is the package's surface: import from ``nodecourse.sde``. The modules behind it are private
(``_brownian``: the path; ``_solve``: :func:`sdeint` and its steps; ``_adjoint``: the stochastic adjoint).
"""

from ._brownian import BrownianPath
from ._solve import METHODS, SDEArgumentError, SDESolution, sdeint, step_times

__all__ = ["BrownianPath", "sdeint", "SDESolution", "SDEArgumentError", "METHODS", "step_times"]
