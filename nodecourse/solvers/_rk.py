"""The pieces shared by the Runge-Kutta integrators: the shape-checked ``func``,
one explicit step and the dense-output polynomial. (Step control lives in
:mod:`nodecourse.solvers._control`.)

Times and step sizes are Python floats (float64) on the host: the controller
needs one scalar per step anyway, and keeping ``t`` and ``h`` off the device
saves a tensor operation for every stage. ``func`` still receives ``t`` as a
0-d tensor of the state's dtype on the state's device, as in torchdiffeq.
"""

from __future__ import annotations

import functools
from typing import Callable, cast

import torch

from nodecourse.solvers import _field_checks as field_checks
from nodecourse.solvers._tableaux import ButcherTableau

Func = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def time_tensor(value: float, like: torch.Tensor) -> torch.Tensor:
    """``value`` as a 0-d tensor with ``like``'s dtype and device (what ``func`` receives as ``t``)."""
    return torch.scalar_tensor(value, dtype=like.dtype, device=like.device)


def _shape_error(f, shape, dtype, device, per_sample: bool) -> Exception:
    if not isinstance(f, torch.Tensor):
        return TypeError(
            f"func(t, y) returned {type(f).__name__}; it must return a tensor shaped like y {tuple(shape)}"
        )
    if f.shape != shape:
        hint = (
            " In per_sample mode t has shape (B,): broadcast it, e.g. t[:, None] for y of shape (B, D)."
            if per_sample
            else ""
        )
        return ValueError(
            f"func(t, y) returned shape {tuple(f.shape)} for y of shape {tuple(shape)}; "
            f"dy/dt must have y's shape.{hint}"
        )
    return ValueError(
        f"func(t, y) returned dtype {f.dtype} on {f.device} for y of dtype {dtype} on "
        f"{device}; return dy/dt in y's dtype and device (e.g. move func: func.to(y))"
    )


def checked_slope(f, y: torch.Tensor, per_sample: bool = False) -> torch.Tensor:
    """Return ``f`` (func's output) after checking it is a tensor with ``y``'s shape, dtype and device."""
    if not isinstance(f, torch.Tensor) or f.shape != y.shape or f.dtype != y.dtype or f.device != y.device:
        raise _shape_error(f, y.shape, y.dtype, y.device, per_sample)
    return f


class CheckedFunc:
    """``func`` whose every output is checked against the state's shape and dtype, and whose every
    call is checked not to change ``y`` in place (``y``'s version counter, compared around the call:
    two attribute reads). The first call also checks the device, names a dtype or device clash
    between ``func``'s tensors and the state (:class:`~nodecourse.solvers._field_checks.FieldMismatchError`),
    and in per-sample mode probes once that ``func`` keeps the batch rows apart
    (:func:`~nodecourse.solvers._field_checks.check_rows_independent`, one more evaluation, counted in
    :attr:`nfe_setup`). Counts the solver's calls in :attr:`nfe`."""

    __slots__ = ("func", "shape", "dtype", "device", "per_sample", "nfe", "nfe_setup", "versioned")

    def __init__(self, func, y0: torch.Tensor, per_sample: bool = False):
        self.func = func
        self.shape, self.dtype, self.device = y0.shape, y0.dtype, y0.device
        self.per_sample = per_sample
        self.nfe = 0
        self.nfe_setup = 0
        # Inference-mode tensors carry no version counter: the first call then compares values instead.
        self.versioned = field_checks.versions_tracked()

    def __call__(self, t, y):
        if self.nfe == 0:
            return self._first_call(t, y)
        version = y._version if self.versioned else 0
        f = self.func(t, y)
        self.nfe += 1
        if (
            type(f) is not torch.Tensor
            and not isinstance(f, torch.Tensor)
            or f.shape != self.shape
            or f.dtype != self.dtype
            or (self.versioned and y._version != version)
        ):
            raise self._error(f, y, version)
        return f

    def _error(self, f, y, version) -> Exception:
        if self.versioned and y._version != version:
            return field_checks.inplace_error(version, y._version)
        return _shape_error(f, self.shape, self.dtype, self.device, self.per_sample)

    def _first_call(self, t, y):
        before = None if self.versioned else y.clone()
        version = y._version if self.versioned else 0
        probe = self.per_sample and y.shape[0] > 1
        rng = field_checks.rng_state(y.device) if probe else None
        try:
            f = self.func(t, y)
        except RuntimeError as err:  # e.g. nn.Linear's "mat1 and mat2 must have the same dtype"
            named: Exception | None = field_checks.mismatch_error(self.func, y, err)
            if named is None and self.per_sample and t.dim() == 1:
                named = field_checks.per_sample_time_error(self.func, t, y, err)
            if named is not None:
                raise named from err
            raise
        self.nfe += 1
        if before is not None and not torch.equal(before, y):
            raise field_checks.inplace_error()
        if (
            not isinstance(f, torch.Tensor)
            or f.device != self.device
            or f.shape != self.shape
            or f.dtype != self.dtype
            or (self.versioned and y._version != version)
        ):
            raise self._error(f, y, version)
        if probe:
            self.nfe_setup += 1
            field_checks.check_rows_independent(self._probe, t, y, f, rng)
        return f

    def _probe(self, t, y):
        """``func(t, y)`` for a check (not counted in :attr:`nfe`), its output checked as every call's."""
        f = self.func(t, y)
        if not isinstance(f, torch.Tensor) or f.shape != self.shape or f.dtype != self.dtype:
            raise _shape_error(f, self.shape, self.dtype, self.device, self.per_sample)
        return f


def nonzero_rows(tab: ButcherTableau) -> list[list[tuple[int, float]]]:
    """For each stage i >= 1, the pairs ``(j, a_ij)`` with ``a_ij != 0`` (zeros cost an op otherwise)."""
    return [[(j, a) for j, a in enumerate(row) if a != 0.0] for row in tab.explicit_rows]


def combine(base: torch.Tensor | None, ks: list[torch.Tensor], coeffs: list[tuple[int, float]], h: float):
    """``base + h * sum_j coeff_j * ks[j]`` as a chain of fused ``add(alpha=...)`` ops.

    ``base=None`` means zero. Shapes: every tensor has the state's shape.
    """
    out = base
    for j, cj in coeffs:
        if out is None:
            out = ks[j] * (h * cj)
        else:
            out = torch.add(out, ks[j], alpha=h * cj)
    return out


class RKPlan:
    """A tableau turned into the lists the inner loop needs (built once per solve)."""

    def __init__(self, tab: ButcherTableau):
        self.tab = tab
        self.rows = nonzero_rows(tab)
        self.c = list(tab.c)
        self.fsal = tab.fsal
        self.b = [(j, w) for j, w in enumerate(tab.b) if w != 0.0]
        self.err = [(j, w) for j, w in enumerate(tab.b_err) if w != 0.0] if tab.adaptive else None
        self.mid = [(j, w) for j, w in enumerate(tab.mid) if w != 0.0] if tab.mid is not None else None
        # Evaluations per step beyond the reused first stage.
        self.new_evals = tab.stages - 1
        self.dense = dense_coefficients(tab, self.fsal)
        self._matrices: dict = {}  # (dtype, device) -> StageMatrices

    def matrices(self, like: torch.Tensor) -> StageMatrices:
        """The tableau's coefficients as tensors in ``like``'s dtype and device (built once per pair)."""
        key = (like.dtype, like.device)
        found = self._matrices.get(key)
        if found is None:
            found = self._matrices[key] = StageMatrices(self.tab, like.dtype, like.device)
        return found

    def step(self, func: Func, t0: float, h: float, y0: torch.Tensor, f0: torch.Tensor):
        """One explicit RK step from ``(t0, y0)`` with slope ``f0 = func(t0, y0)``.

        Returns ``(y1, ks)``: the new state (shape of ``y0``) and the stage slopes
        (``ks[0] is f0``; for FSAL tableaux ``ks[-1] = func(t0 + h, y1)``).

        A state of one row ``(1, n)`` with ``n <= FUSED_MAX_NUMEL`` (one trajectory, as in the short
        solves of an ODE-RNN update) makes each stage one matrix product on the slopes so far
        (:meth:`_fused_step`); any other state a chain of fused adds, one per nonzero coefficient.
        """
        if _one_small_row(y0):
            return self._fused_step(func, t0, h, y0, f0)
        ks = [f0]
        yi = y0
        t1 = t0 + h
        # time_tensor inlined: this loop is the solver's hot path (one call per stage)
        scalar, dtype, device = torch.scalar_tensor, y0.dtype, y0.device
        for i, row in enumerate(self.rows, start=1):
            yi = combine(y0, ks, row, h)
            ci = self.c[i]
            ti = t1 if ci == 1.0 else t0 + ci * h
            ks.append(func(scalar(ti, dtype=dtype, device=device), yi))
        y1 = yi if self.fsal else combine(y0, ks, self.b, h)
        return y1, ks

    def _fused_step(self, func: Func, t0: float, h: float, y0: torch.Tensor, f0: torch.Tensor):
        """:meth:`step` for a state of shape ``(1, n)``, stage ``i`` as ``addmm(y0, a_i, K, alpha=h)``:
        ``a_i`` the row of the tableau (shape ``(1, i)``), ``K = cat(ks)`` the slopes so far as rows
        (shape ``(i, n)``). Two torch calls per stage where the chain of adds makes one per nonzero
        coefficient (20 for dopri5's six stages). A stage of one term stays one add (Euler's, the
        midpoint rule's first stage). Other shapes would need a stack and two views around each
        product, which costs more than the adds it saves (measured: 1.2x the solve's time at (50, 20))."""
        mats = self.matrices(y0)
        ks = [f0]
        t1 = t0 + h
        cat, addmm = torch.cat, torch.addmm
        # every stage's time in one tensor: one op (one copy to the device) where a 0-d tensor per stage is one each
        times = torch.tensor(
            [t1 if ci == 1.0 else t0 + ci * h for ci in self.c[1:]], dtype=y0.dtype, device=y0.device
        ).unbind()
        for row, a_i, ti in zip(self.rows, mats.rows, times):
            yi = combine(y0, ks, row, h) if len(row) < 2 else addmm(y0, a_i, cat(ks), alpha=h)
            ks.append(func(ti, yi))
        if self.fsal:
            return yi, ks
        if len(self.b) < 2:
            return combine(y0, ks, self.b, h), ks
        return addmm(y0, mats.b, cat(ks), alpha=h), ks

    def step_from(self, func: Func, t0: float, h: float, y0: torch.Tensor) -> torch.Tensor:
        """A whole step including the first slope (fixed-step methods); returns ``y1``."""
        return self.step(func, t0, h, y0, func(time_tensor(t0, y0), y0))[0]

    def error(self, ks: list[torch.Tensor], h: float) -> torch.Tensor:
        """Local error estimate ``h * sum_j (b_j - b_low_j) k_j`` (shape of the state, no graph:
        it only steers the step size). A state of one row: one matrix product on the detached slopes."""
        err = self.err
        if err is None:  # only adaptive pairs are stepped with an error estimate
            raise ValueError(f"tableau {self.tab.name!r} has no embedded pair (b_low): no error estimate")
        k0 = ks[0]
        if len(err) > 2 and _one_small_row(k0):
            slopes = torch.cat(ks)
            slopes, k0 = (slopes.detach(), k0.detach()) if slopes.requires_grad else (slopes, k0)
            # beta=0: k0 only gives the output's shape (its values are ignored, NaN included); h folded in
            # StageMatrices.err is set exactly when self.err is (both follow tab.adaptive)
            err_matrix = cast(torch.Tensor, self.matrices(k0).err)
            return torch.addmm(k0, err_matrix, slopes, beta=0, alpha=h)
        with torch.no_grad():
            return combine(None, ks, err, h)


#: States of one row ``(1, n)`` with ``n`` at most this take the fused stage combinations of
#: :meth:`RKPlan.step` (one ``addmm`` per stage); larger ones the chain of adds, whose memory traffic is
#: lower there.
FUSED_MAX_NUMEL = 2048


def _one_small_row(y: torch.Tensor) -> bool:
    return y.dim() == 2 and y.shape[0] == 1 and y.shape[1] <= FUSED_MAX_NUMEL


class StageMatrices:
    """A tableau's coefficients as tensors of one dtype and device (zeros included):
    ``rows[i - 1]`` the stage-``i`` row ``a_i`` of shape ``(1, i)``, ``b`` the weights of the new state
    ``(1, stages)`` and ``err`` the error weights ``b - b_low`` ``(1, stages)`` (adaptive pairs only)."""

    __slots__ = ("rows", "b", "err")

    def __init__(self, tab: ButcherTableau, dtype: torch.dtype, device: torch.device):
        def row(values) -> torch.Tensor:
            return torch.tensor([list(values)], dtype=dtype, device=device)

        self.rows = [row((tuple(a) + (0.0,) * i)[:i]) for i, a in enumerate(tab.explicit_rows, start=1)]
        self.b = row(tab.b)
        self.err = row(tab.b_err) if tab.adaptive else None


@functools.lru_cache(maxsize=32)
def plan_for(tab: ButcherTableau) -> RKPlan:
    """The :class:`RKPlan` of ``tab``, built on its first solve and shared after (a plan is read-only;
    equal tableaux share one)."""
    return RKPlan(tab)


#: The interpolant's polynomials in ``x`` (coefficients of ``x, x^2, x^3, x^4``), per term.
#: Quartic (a tableau with ``mid`` weights): through ``y0``, ``y1``, ``y_mid = y(t0 + h/2)`` and the
#: end slopes ``f0``, ``f1`` (Shampine's, as torchdiffeq's dopri5).
_QUARTIC = {
    "y1 - y0": (0.0, -5.0, 14.0, -8.0),
    "y_mid - y0": (0.0, 16.0, -32.0, 16.0),
    "h f0": (1.0, -4.0, 5.0, -2.0),
    "h f1": (0.0, 1.0, -3.0, 2.0),
}
#: Cubic Hermite (no ``mid``): through ``y0``, ``y1`` and the end slopes; third order.
_HERMITE = {"y1 - y0": (0.0, 3.0, -2.0, 0.0), "h f0": (1.0, -2.0, 1.0, 0.0), "h f1": (0.0, -1.0, 1.0, 0.0)}


def dense_coefficients(tab: ButcherTableau, fsal: bool) -> list[tuple[int, tuple[float, ...]]]:
    """The dense output of one step as weights on its slopes:
    ``y(t0 + x h) = y0 + h * sum_j w_j(x) ks[j]`` with ``w_j(x) = sum_p coeffs_j[p-1] x^p`` (p = 1..4).

    Returns ``(j, coeffs_j)`` for the slopes with a nonzero polynomial. ``ks`` are the step's
    slopes as :meth:`RKPlan.step` returns them plus, for a tableau without FSAL, ``f(t1, y1)``
    appended (so ``ks[-1]`` is always the slope at the end). It is the quartic or cubic Hermite
    interpolant written on the slopes: ``y1 - y0 = h sum_j b_j k_j`` and
    ``y_mid - y0 = h sum_j mid_j k_j``, so evaluating it is one chain of fused adds, with
    nothing built per step. ``w_j(1) = b_j`` (it ends at ``y1``); with ``mid``, ``w_j(1/2) = mid_j``.
    """
    if not tab.adaptive:
        return []
    n = tab.stages if fsal else tab.stages + 1  # slopes of a step, the end slope last
    terms = _HERMITE if tab.mid is None else _QUARTIC
    weights = {
        "y1 - y0": list(tab.b) + [0.0] * (n - tab.stages),
        "y_mid - y0": list(tab.mid or ()) + [0.0] * (n - len(tab.mid or ())),
        "h f0": [1.0] + [0.0] * (n - 1),
        "h f1": [0.0] * (n - 1) + [1.0],
    }
    out = []
    for j in range(n):
        coeffs = tuple(sum(weights[term][j] * poly[p] for term, poly in terms.items()) for p in range(4))
        if any(coeffs):
            out.append((j, coeffs))
    return out


def dense_weights(coefficients: list[tuple[int, tuple[float, ...]]], x):
    """``(j, w_j(x))`` for the slopes of :func:`dense_coefficients`; ``x`` a float (or a tensor)."""
    x2 = x * x
    x3, x4 = x2 * x, x2 * x2
    return [(j, c1 * x + c2 * x2 + c3 * x3 + c4 * x4) for j, (c1, c2, c3, c4) in coefficients]


class DenseOutput:
    """Interpolant on one accepted step, evaluated at ``x = (t - t0) / h`` in ``[0, 1]``.

    With the tableau's ``mid`` weights (dopri5): the quartic through ``y0, y1``,
    the slopes at both ends and ``y(t0 + h/2)`` (as torchdiffeq does). Without
    (bosh3): the cubic Hermite through ``y0, y1`` and the end slopes, which is
    third order, where torchdiffeq's quartic with bosh3's crude midpoint is not.
    Both as weights on the step's slopes (:func:`dense_coefficients`): one chain of
    fused adds per output time, nothing built when the step is accepted.
    """

    def __init__(self, plan: RKPlan, y0: torch.Tensor, ks: list[torch.Tensor], h: float):
        self.coefficients, self.y0, self.ks, self.h = plan.dense, y0, ks, h

    def __call__(self, x: float) -> torch.Tensor:
        return combine(self.y0, self.ks, dense_weights(self.coefficients, x), self.h)
