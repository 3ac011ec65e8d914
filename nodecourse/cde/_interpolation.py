"""Continuous paths through irregular, partially observed series, for neural CDEs.

A neural CDE (Kidger et al. 2020) is driven by a path ``X(t)`` built from observations
``x[k]`` at times ``t[k]``. Three paths, with torchcde's conventions (same coefficient layout, so
coefficients move between the two libraries):

- :func:`linear_coeffs` + :class:`LinearInterpolation`: piecewise linear; ``dX/dt`` jumps at
  every knot.
- :func:`hermite_cubic_coeffs` + :class:`CubicSpline`: cubic Hermite pieces whose slope at
  ``t[k]`` is the backward difference ``(x[k] - x[k-1]) / (t[k] - t[k-1])``; continuous ``dX/dt``.
- :func:`natural_cubic_coeffs` + :class:`CubicSpline`: the natural cubic spline; continuous
  second derivative, but each piece depends on every observation.

Shapes: ``x`` is ``(..., length, channels)`` (``...``: batch dimensions), ``t`` is ``(length,)``,
strictly increasing (default ``0, 1, ..., length - 1``). NaN marks a missing value; each channel
is filled on its own (see each function). Computing coefficients with missing values loops in
Python: compute them once per data set, not per forward pass.

Causality (the ``causal`` attribute): a path is causal when its restriction to ``[t[0], t[k]]``
depends only on ``x[0..k]``, so the CDE's state at ``t[k]`` can be computed online, as each
observation arrives. Linear and Hermite-with-backward-differences pieces on ``[t[k-1], t[k]]`` use
``x[k-2..k]`` only: causal. The natural spline's knot slopes solve one tridiagonal system through
all the knots, so a later observation moves its value at every earlier time: not causal. Filling
a missing value by interpolation looks ahead to that channel's next observation, so with NaNs the
linear and Hermite paths are causal only at the times each channel is observed (forward-fill the
series first, ``x`` carried forward, for strict causality).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = [
    "KINDS",
    "CubicSpline",
    "LinearInterpolation",
    "hermite_cubic_coeffs",
    "intensity_channels",
    "interpolate",
    "linear_coeffs",
    "natural_cubic_coeffs",
    "time_channel",
]


def _check_path(x, t, name: str) -> torch.Tensor:
    """``x``: ``(..., length, channels)`` floating; ``t``: ``(length,)`` strictly increasing (default
    ``arange(length)``), returned in ``x``'s dtype and on its device."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(
            f"{name}: x must be a floating tensor of shape (..., length, channels), got "
            f"{type(x).__name__}{'' if not isinstance(x, torch.Tensor) else ' of dtype ' + str(x.dtype)}; "
            f"use x.double() or x.float()"
        )
    if x.dim() < 2:
        raise ValueError(
            f"{name}: x must have shape (..., length, channels), got {tuple(x.shape)}; "
            f"for one channel write x.unsqueeze(-1)"
        )
    return _check_times(t, x.size(-2), x, name, what="x.shape[-2]")


def _check_times(t, length: int, like: torch.Tensor, name: str, what: str) -> torch.Tensor:
    if length < 2:
        raise ValueError(f"{name}: a path needs at least 2 observations, got {what} = {length}")
    if t is None:
        return torch.arange(length, dtype=like.dtype, device=like.device)
    if not isinstance(t, torch.Tensor):
        t = torch.as_tensor(t, dtype=like.dtype, device=like.device)
    if not t.is_floating_point():
        raise TypeError(f"{name}: t must be a floating tensor, got dtype {t.dtype}; use t.to(x.dtype)")
    if t.device != like.device:
        raise ValueError(f"{name}: t is on {t.device} but the data on {like.device}; move t with t.to(x.device)")
    if t.dim() != 1 or t.numel() != length:
        raise ValueError(f"{name}: t must have shape ({length},) to match {what}, got {tuple(t.shape)}")
    t = t.to(like.dtype)
    if not bool((t[1:] > t[:-1]).all()) or not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name}: t must be finite and strictly increasing, got {t.tolist()}")
    return t


def linear_coeffs(x: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
    """Coefficients of the linear interpolation of ``x`` (torchcde's ``linear_interpolation_coeffs``).

    Args:
        x: observations, shape ``(..., length, channels)``; NaN marks a missing value.
        t: observation times, shape ``(length,)``, strictly increasing (default ``0..length-1``).

    Returns:
        ``x`` with each missing value filled, shape ``(..., length, channels)``: linearly in time
        between the channel's observations on either side; before its first (after its last)
        observation, that observation's value; a channel never observed is 0 (a constant path).
        Pass it to :class:`LinearInterpolation` (or to :func:`hermite_cubic_coeffs`'s consumers).
    """
    t = _check_path(x, t, "linear_coeffs")
    return _fill_linear(x, t)


def _fill_linear(x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    observed = ~torch.isnan(x)
    if bool(observed.all()):
        return x
    length = x.size(-2)
    index = torch.arange(length, device=x.device).unsqueeze(-1).expand_as(x)
    # the last observed index at or before each position (-1: none), the first at or after (length: none)
    before = torch.where(observed, index, -1).cummax(dim=-2).values
    after = torch.where(observed, index, length).flip(-2).cummin(dim=-2).values.flip(-2)
    has_before, has_after = before >= 0, after < length
    before, after = before.clamp(min=0), after.clamp(max=length - 1)
    # zeros, not NaN, where unobserved: a NaN in an unused branch of torch.where still poisons gradients
    values = torch.where(observed, x, torch.zeros((), dtype=x.dtype, device=x.device))
    x_before, x_after = values.gather(-2, before), values.gather(-2, after)
    t_before, t_after, t_here = t[before], t[after], t[index]
    both = has_before & has_after & ~observed
    span = torch.where(both, t_after - t_before, torch.ones((), dtype=x.dtype, device=x.device))
    ratio = (t_here - t_before) / span
    inside = x_before + ratio * (x_after - x_before)
    ends = torch.where(has_before, x_before, torch.where(has_after, x_after, torch.zeros_like(values)))
    return torch.where(observed, x, torch.where(both, inside, ends))


def hermite_cubic_coeffs(x: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
    """Coefficients of the cubic Hermite path with backward differences (torchcde's
    ``hermite_cubic_coefficients_with_backward_differences``): causal, with continuous ``dX/dt``.

    Missing values are filled first as :func:`linear_coeffs` fills them. On ``[t[k], t[k+1]]`` the
    cubic goes from ``x[k]`` to ``x[k+1]``; its slope at ``t[k]`` is the backward difference
    ``(x[k] - x[k-1]) / (t[k] - t[k-1])`` (the forward one on the first piece), its slope at
    ``t[k+1]`` the piece's own difference quotient, so the slope is continuous at each knot.

    Args:
        x, t: as :func:`linear_coeffs`.

    Returns:
        shape ``(..., length - 1, 4 * channels)``: per piece ``[a, b, 2c, 3d]`` of
        ``a + b s + c s^2 + d s^3`` in ``s = time - t[k]`` (torchcde's layout). Pass it to
        ``CubicSpline(coeffs, t, causal=True)`` (or :func:`interpolate` with ``kind="hermite"``).
    """
    t = _check_path(x, t, "hermite_cubic_coeffs")
    x = _fill_linear(x, t)
    h = (t[1:] - t[:-1]).unsqueeze(-1)
    slope = (x[..., 1:, :] - x[..., :-1, :]) / h
    start_slope = torch.cat([slope[..., :1, :], slope[..., :-1, :]], dim=-2)
    return _cubic_pieces(x[..., :-1, :], slope, start_slope, slope, h)


def _cubic_pieces(a, slope, start_slope, end_slope, h) -> torch.Tensor:
    """``[a, b, 2c, 3d]`` of the cubic with value ``a`` and slope ``start_slope`` at the piece's start,
    slope ``end_slope`` at its end, and mean slope ``slope`` over a piece of length ``h``."""
    two_c = 2 * (3 * slope - 2 * start_slope - end_slope) / h
    three_d = 3 * (start_slope + end_slope - 2 * slope) / (h * h)
    return torch.cat([a, start_slope, two_c, three_d], dim=-1)


def natural_cubic_coeffs(x: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
    """Coefficients of the natural cubic spline through ``x`` (torchcde's ``natural_cubic_coeffs``).

    Missing values, per channel: NaNs before the first observation take its value, NaNs after the
    last take the last one's; the spline then runs through the channel's observed (and so filled)
    values only, skipping interior NaNs, and is re-expanded on every interval of ``t``. A channel
    never observed is 0. Not causal (see the module docstring): use it for offline data.

    Args:
        x, t: as :func:`linear_coeffs`.

    Returns:
        shape ``(..., length - 1, 4 * channels)``, the layout of :func:`hermite_cubic_coeffs`;
        pass it to :class:`CubicSpline`.
    """
    t = _check_path(x, t, "natural_cubic_coeffs")
    *batch, length, channels = x.shape
    rows = x.transpose(-1, -2).reshape(-1, length)  # one scalar series per (batch, channel)
    rows = _fill_ends(rows)
    missing = torch.isnan(rows).any(dim=-1).tolist()
    pieces = [None] * rows.size(0)
    complete = [i for i, m in enumerate(missing) if not m]
    if complete:
        at = torch.tensor(complete, device=x.device)
        for i, piece in zip(complete, _natural_pieces(rows[at], t).unbind(0)):
            pieces[i] = piece
    for i in (i for i, m in enumerate(missing) if m):
        pieces[i] = _natural_pieces_with_gaps(rows[i], t)
    stacked = torch.stack(pieces, dim=0)  # (rows, length - 1, 4)
    # (rows, length - 1, [a, b, 2c, 3d]) -> (..., length - 1, 4 * channels), the four blocks of channels in turn
    stacked = stacked.reshape(*batch, channels, length - 1, 4)
    nb = len(batch)
    return stacked.permute(*range(nb), nb + 1, nb + 2, nb).reshape(*batch, length - 1, 4 * channels)


def _fill_ends(rows: torch.Tensor) -> torch.Tensor:
    """Rows ``(R, length)``: leading NaNs take the first observed value, trailing ones the last;
    a row never observed becomes zeros."""
    observed = ~torch.isnan(rows)
    length = rows.size(-1)
    index = torch.arange(length, device=rows.device).expand_as(rows)
    first = torch.where(observed, index, length).min(dim=-1, keepdim=True).values
    last = torch.where(observed, index, -1).max(dim=-1, keepdim=True).values
    never = first == length
    values = torch.where(observed, rows, torch.zeros((), dtype=rows.dtype, device=rows.device))
    first_value = values.gather(-1, first.clamp(max=length - 1))
    last_value = values.gather(-1, last.clamp(min=0))
    filled = torch.where(index < first, first_value, torch.where(index > last, last_value, rows))
    return torch.where(never, torch.zeros_like(rows), filled)


def _natural_pieces(y: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """Pieces ``(R, n - 1, 4)`` of the natural cubic splines through rows ``y`` ``(R, n)`` at knots ``s``."""
    h = s[1:] - s[:-1]
    r = h.reciprocal()
    slope = (y[..., 1:] - y[..., :-1]) * r
    # knot slopes k: continuity of the second derivative at interior knots, zero curvature at the ends:
    # k[i-1]/h[i-1] + 2 k[i] (1/h[i-1] + 1/h[i]) + k[i+1]/h[i] = 3 (slope[i-1]/h[i-1] + slope[i]/h[i])
    zero = r.new_zeros(1)
    diagonal = 2 * (torch.cat([r, zero]) + torch.cat([zero, r]))
    scaled = 3 * slope * r
    rhs = torch.cat([scaled, scaled.new_zeros(*scaled.shape[:-1], 1)], -1)
    rhs = rhs + torch.cat([scaled.new_zeros(*scaled.shape[:-1], 1), scaled], -1)
    k = _tridiagonal_solve(r, diagonal, r, rhs)
    pieces = _cubic_pieces(y[..., :-1, None], slope[..., None], k[..., :-1, None], k[..., 1:, None], h[:, None])
    return pieces


def _tridiagonal_solve(lower, diagonal, upper, rhs) -> torch.Tensor:
    """Solve ``A k = rhs`` for tridiagonal ``A`` (Thomas algorithm; ``rhs`` ``(..., n)``, the diagonals
    shared by all rows). Built from out-of-place operations, so autograd differentiates it."""
    n = rhs.size(-1)
    d, b = [diagonal[0]], [rhs[..., 0]]
    for i in range(1, n):
        w = lower[i - 1] / d[i - 1]
        d.append(diagonal[i] - w * upper[i - 1])
        b.append(rhs[..., i] - w * b[i - 1])
    k = [None] * n
    k[n - 1] = b[n - 1] / d[n - 1]
    for i in range(n - 2, -1, -1):
        k[i] = (b[i] - upper[i] * k[i + 1]) / d[i]
    return torch.stack(k, dim=-1)


def _natural_pieces_with_gaps(row: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """One series ``(length,)`` with interior NaNs: the spline through its observed values,
    re-expanded on every interval of ``t``: ``(length - 1, 4)``."""
    observed = ~torch.isnan(row)
    s, y = t[observed], row[observed]
    pieces = _natural_pieces(y.unsqueeze(0), s)[0]  # (n_observed - 1, 4)
    # the observed piece that holds each interval's start, and how far into it that start lies
    j = (torch.searchsorted(s, t[:-1], right=True) - 1).clamp(0, s.numel() - 2)
    delta = (t[:-1] - s[j]).unsqueeze(-1)
    a, b, two_c, three_d = pieces[j].unbind(-1)
    a, b, two_c, three_d = a[:, None], b[:, None], two_c[:, None], three_d[:, None]
    c, d = two_c / 2, three_d / 3
    # the same cubic, written in (time - t[i]) instead of (time - s[j]): its Taylor expansion at t[i]
    shifted_a = a + delta * (b + delta * (c + delta * d))
    shifted_b = b + delta * (two_c + delta * three_d)
    shifted_two_c = two_c + 2 * three_d * delta
    return torch.cat([shifted_a, shifted_b, shifted_two_c, three_d], dim=-1)


class _Interpolation(nn.Module):
    """Shared by the paths: knots, ``interval``, ``grid_points`` and the piece lookup.

    An ``nn.Module`` (``.to(device)`` moves it) whose tensors are buffers read afresh at each
    evaluation, nothing derived from them cached: a coefficient tensor that requires grad (or a
    stand-in put there by the no-graph gradient routes of :func:`nodecourse.odeint`) is what every
    evaluation uses, so ``gradient="adjoint"`` and ``"checkpoint"`` find and differentiate it.
    """

    causal: bool

    @property
    def grid_points(self) -> torch.Tensor:
        """The knots, shape ``(length,)``: where the path's pieces meet (``dX/dt`` or its derivative jumps)."""
        return self._knots

    @property
    def interval(self) -> torch.Tensor:
        """``[t[0], t[-1]]``, shape ``(2,)``."""
        return torch.stack([self._knots[0], self._knots[-1]])

    def _locate(self, t, n_pieces: int):
        """``(s, k)``: piece index ``k`` holding ``t`` (a time in ``(t[k], t[k+1]]`` is on piece ``k``,
        as torchcde's; times outside the knots extend the end pieces) and ``s = t - t[k]``."""
        like = self._coeffs
        t = torch.as_tensor(t, dtype=like.dtype, device=like.device)
        k = (torch.bucketize(t.detach(), self._knots.detach()) - 1).clamp(0, n_pieces - 1)
        return t - self._knots[k], k


class LinearInterpolation(_Interpolation):
    """The piecewise linear path through the coefficients of :func:`linear_coeffs` (causal).

    Args:
        coeffs: shape ``(..., length, channels)``, from :func:`linear_coeffs`.
        t: the times given to :func:`linear_coeffs` (default ``0..length-1``).

    ``evaluate(t)`` and ``derivative(t)``: ``t`` a scalar (shape ``()``, result ``(..., channels)``)
    or shape ``(n,)`` (result ``(..., n, channels)``); at a knot the derivative is the left piece's.
    """

    causal = True

    def __init__(self, coeffs: torch.Tensor, t: torch.Tensor | None = None):
        super().__init__()
        if not isinstance(coeffs, torch.Tensor) or coeffs.dim() < 2:
            raise ValueError(
                "LinearInterpolation: coeffs must be the tensor linear_coeffs(x, t) returns, shape "
                f"(..., length, channels); got {getattr(coeffs, 'shape', type(coeffs).__name__)}"
            )
        knots = _check_times(t, coeffs.size(-2), coeffs, "LinearInterpolation", "coeffs.shape[-2]")
        self.register_buffer("_coeffs", coeffs)
        self.register_buffer("_knots", knots)

    def evaluate(self, t) -> torch.Tensor:
        s, k = self._locate(t, self._coeffs.size(-2) - 1)
        start, end = self._coeffs[..., k, :], self._coeffs[..., k + 1, :]
        h = (self._knots[k + 1] - self._knots[k]).unsqueeze(-1)
        return start + s.unsqueeze(-1) * (end - start) / h

    def derivative(self, t) -> torch.Tensor:
        _, k = self._locate(t, self._coeffs.size(-2) - 1)
        h = (self._knots[k + 1] - self._knots[k]).unsqueeze(-1)
        return (self._coeffs[..., k + 1, :] - self._coeffs[..., k, :]) / h


class CubicSpline(_Interpolation):
    """The piecewise cubic path of :func:`hermite_cubic_coeffs` or :func:`natural_cubic_coeffs`.

    Args:
        coeffs: shape ``(..., length - 1, 4 * channels)``.
        t: the times given to the coefficient function (default ``0..length-1``).
        causal: whether the coefficients came from a causal construction: True for
            :func:`hermite_cubic_coeffs`, False (the default) for :func:`natural_cubic_coeffs`.
            The coefficients alone cannot tell (one layout for both); :func:`interpolate` sets it.

    ``evaluate(t)``, ``derivative(t)``: as :class:`LinearInterpolation`'s.
    """

    def __init__(self, coeffs: torch.Tensor, t: torch.Tensor | None = None, *, causal: bool = False):
        super().__init__()
        if not isinstance(coeffs, torch.Tensor) or coeffs.dim() < 2 or coeffs.size(-1) % 4:
            raise ValueError(
                "CubicSpline: coeffs must be the tensor hermite_cubic_coeffs(x, t) or natural_cubic_coeffs(x, t) "
                f"returns, shape (..., length - 1, 4 * channels); got {getattr(coeffs, 'shape', type(coeffs).__name__)}"
            )
        if not isinstance(causal, bool):
            raise TypeError(f"CubicSpline: causal must be True or False, got {causal!r}")
        knots = _check_times(t, coeffs.size(-2) + 1, coeffs, "CubicSpline", "coeffs.shape[-2] + 1")
        self.register_buffer("_coeffs", coeffs)
        self.register_buffer("_knots", knots)
        self.causal = causal

    def _piece(self, t):
        s, k = self._locate(t, self._coeffs.size(-2))
        a, b, two_c, three_d = self._coeffs[..., k, :].chunk(4, dim=-1)
        return s.unsqueeze(-1), a, b, two_c, three_d

    def evaluate(self, t) -> torch.Tensor:
        s, a, b, two_c, three_d = self._piece(t)
        return a + s * (b + s * (0.5 * two_c + s * three_d / 3))

    def derivative(self, t) -> torch.Tensor:
        s, _, b, two_c, three_d = self._piece(t)
        return b + s * (two_c + s * three_d)


#: ``kind`` of :func:`interpolate`: coefficient function and causality.
KINDS = ("linear", "hermite", "natural")


def interpolate(x: torch.Tensor, t: torch.Tensor | None = None, *, kind: str = "hermite") -> _Interpolation:
    """The path through ``x`` in one call: coefficients and interpolation object, ``causal`` set.

    Args:
        x, t: as :func:`linear_coeffs`.
        kind: ``"linear"`` (:class:`LinearInterpolation`), ``"hermite"`` (:func:`hermite_cubic_coeffs`,
            causal) or ``"natural"`` (:func:`natural_cubic_coeffs`, not causal).
    """
    if kind not in KINDS:
        raise ValueError(f"interpolate: kind must be one of {KINDS}, got {kind!r}")
    if kind == "linear":
        return LinearInterpolation(linear_coeffs(x, t), t)
    if kind == "hermite":
        return CubicSpline(hermite_cubic_coeffs(x, t), t, causal=True)
    return CubicSpline(natural_cubic_coeffs(x, t), t, causal=False)


def intensity_channels(x: torch.Tensor) -> torch.Tensor:
    """Append the observational intensity (Kidger et al. 2020): per channel, how many values have
    been observed so far.

    Whether a value was measured often carries information (a test ordered because a patient
    worsened); filling NaNs hides it, the count keeps it, and a count is never missing.

    Args:
        x: shape ``(..., length, channels)``, NaN where missing.

    Returns:
        shape ``(..., length, 2 * channels)``: ``x`` (NaNs kept, for the coefficient functions to
        fill), then the cumulative count of observed values of each channel, in ``x``'s dtype.
    """
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 2:
        raise ValueError(
            "intensity_channels: x must be a floating tensor of shape (..., length, channels), got "
            f"{getattr(x, 'shape', type(x).__name__)}"
        )
    counts = (~torch.isnan(x)).cumsum(dim=-2).to(x.dtype)
    return torch.cat([x, counts], dim=-1)


def time_channel(x: torch.Tensor, t: torch.Tensor | None = None) -> torch.Tensor:
    """Prepend the observation time as channel 0 (so the CDE sees time pass, and the path's
    increments in the time channel are the time steps, Kidger et al. 2020).

    Args:
        x: shape ``(..., length, channels)``.
        t: shape ``(length,)`` (default ``0..length-1``).

    Returns:
        shape ``(..., length, 1 + channels)``.
    """
    t = _check_path(x, t, "time_channel")
    times = t.unsqueeze(-1).expand(*x.shape[:-1], 1)
    return torch.cat([times, x], dim=-1)
