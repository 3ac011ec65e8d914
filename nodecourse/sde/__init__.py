"""Stochastic differential equations: a seeded Brownian path and fixed-step solvers.

- :class:`BrownianPath`: ``W(s, t)`` for any ``s <= t`` in ``[t0, t1]``, the same path however it is queried.
- :func:`sdeint`: Euler-Maruyama, Milstein (Ito) and reversible Heun (Stratonovich) with torchsde's SDE
  interface (``f``, ``g``, ``noise_type``, ``sde_type``); returns an :class:`SDESolution`. Gradients by
  backprop through the solve, or (``gradient="adjoint"``, Stratonovich SDEs) by the stochastic adjoint.
"""

from .brownian import BrownianPath
from .solve import METHODS, SDEArgumentError, SDESolution, sdeint

__all__ = ["BrownianPath", "sdeint", "SDESolution", "SDEArgumentError", "METHODS"]
