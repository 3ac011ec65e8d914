"""Stochastic differential equations: a seeded Brownian path and fixed-step solvers.

- :class:`BrownianPath`: ``W(s, t)`` for any ``s <= t`` in ``[t0, t1]``, the same path however it is queried.
- :func:`sdeint`: Euler-Maruyama, Milstein (Ito) and reversible Heun (Stratonovich) with torchsde's SDE
  interface (``f``, ``g``, ``noise_type``, ``sde_type``); returns an :class:`SDESolution`. Gradients by
  backprop through the solve, or (``gradient="adjoint"``, Stratonovich SDEs) by the stochastic adjoint.
- :func:`step_times`: the times at which those fixed steps end, per output interval.

This file is the package's surface: import from ``nodecourse.sde``. The modules behind it are private
(``_brownian``: the path; ``_solve``: :func:`sdeint` and its steps; ``_adjoint``: the stochastic adjoint).
"""

from nodecourse.sde import _brownian, _solve
from nodecourse.sde._brownian import *  # noqa: F403
from nodecourse.sde._solve import *  # noqa: F403

__all__ = [*_brownian.__all__, *_solve.__all__]
