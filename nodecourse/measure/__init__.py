"""Measuring what a model and its solver do.

- logs of every solve, tolerance sweeps: :func:`tolerance_sweep`, :class:`SolverWorkLog`;
- peak memory of forward + backward, bytes saved for backward: :func:`measure_peak`,
  :func:`memory_sweep`, :func:`saved_tensor_bytes`;
- adjoint and backprop gradients against exact ones: :func:`gradient_table`, :func:`analytic_gradient`;
- what a trained 2-D classifier does everywhere: :func:`circle_probe`, :func:`decision_grid`;
- small ODE problems with known solutions: :data:`PROBLEMS`, :func:`reference_solution`;
- the one text-table formatter reports use: :func:`text_table`, :func:`markdown_table`, :func:`json_safe`.

This file is the package's surface: import from ``nodecourse.measure``. The modules behind it are
private (``_diagnostics``, ``_memory``, ``_gradient_check``, ``_probes``, ``_problems``, ``_tables``,
and ``_adjoint_sweep``, the benchmark's sweep). Each is imported on first use of one of its names
(PEP 562), so ``import nodecourse.measure`` imports no torch, and ``python -m
nodecourse.measure._memory`` (the isolated memory sweep) runs its module once.
"""

from nodecourse import _lazy

# ``{name: private module}``, each module imported on first use of one of its names.
_LAZY = {
    "rows_to_columns": "._diagnostics",
    "rows_to_markdown": "._diagnostics",
    "SolveRecord": "._diagnostics",
    "SolverWorkLog": "._diagnostics",
    "SweepRow": "._diagnostics",
    "tolerance_sweep": "._diagnostics",
    "ALL_MODES": "._memory",
    "cpu_peak_supported": "._memory",
    "forward_backward": "._memory",
    "GRADIENT_MODES": "._memory",
    "measure_peak": "._memory",
    "memory_sweep": "._memory",
    "MemoryConfig": "._memory",
    "MemorySweep": "._memory",
    "run_sweep": "._memory",
    "saved_activation_bytes": "._memory",
    "saved_tensor_bytes": "._memory",
    "analytic_gradient": "._gradient_check",
    "DecayFeed": "._gradient_check",
    "gradient_error_sweep": "._gradient_check",
    "gradient_table": "._gradient_check",
    "GradientRow": "._gradient_check",
    "GradientTable": "._gradient_check",
    "NAMES": "._gradient_check",
    "ROUTES": "._gradient_check",
    "theta_error": "._gradient_check",
    "circle_points": "._probes",
    "circle_probe": "._probes",
    "CircleProbe": "._probes",
    "decision_grid": "._probes",
    "DecisionGrid": "._probes",
    "DEFAULT_PROBE_RADII": "._probes",
    "evaluate": "._probes",
    "probe_circles": "._probes",
    "Problem": "._problems",
    "PROBLEMS": "._problems",
    "reference_solution": "._problems",
    "json_safe": "._tables",
    "markdown_table": "._tables",
    "text_table": "._tables",
}

__getattr__, __dir__ = _lazy(__name__, _LAZY)


__all__ = list(_LAZY)
