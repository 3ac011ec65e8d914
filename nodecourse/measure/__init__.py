"""Measuring what a model and its solver do.

- :mod:`nodecourse.measure.diagnostics`: logs of every solve, tolerance sweeps;
- :mod:`nodecourse.measure.memory`: peak memory of forward + backward, bytes saved for backward;
- :mod:`nodecourse.measure.gradient_check`: adjoint and backprop gradients against exact ones;
- :mod:`nodecourse.measure.probes`: what a trained model's solver does per input;
- :mod:`nodecourse.measure.problems`: small ODE problems with known solutions;
- :mod:`nodecourse.measure.tables`: the one text-table formatter reports use.

The surface of this package is its modules (each imported by name: ``from
nodecourse.measure.memory import measure_peak``); this file imports none of them, so
``python -m nodecourse.measure.memory`` (the isolated memory sweep) runs its module once.
"""

__all__ = ["diagnostics", "gradient_check", "memory", "probes", "problems", "tables"]
