"""A Brownian path that answers any interval query from a seed: :class:`BrownianPath`.

The path on ``[t0, t1]`` is a binary tree of Brownian-bridge draws. ``W(t0) = 0``; ``W(t1)`` is
``sqrt(t1 - t0)`` times a normal draw; the value at the midpoint ``m`` of a node ``[a, b]`` is the bridge
draw ``(W(a) + W(b)) / 2 + sqrt((b - a) / 4) * Z`` (the exact conditional law of ``W(m)`` given ``W(a)`` and
``W(b)``). Each draw ``Z`` has its own seed, made from the path's seed and the node's place in the tree alone,
so the value at a point never depends on which other points were asked for, or in which order: queries
of any granularity see one and the same path.

A time that is not a node (not a dyadic fraction of ``[t0, t1]``) is reached by descending the tree
``depth`` levels; inside that leaf (width ``(t1 - t0) * 2**-depth``) its value is one more bridge draw
seeded by the leaf and the time. Every single value is exactly distributed; two query times inside the
same leaf are not jointly exact (their draws are independent), which for the default ``depth=40``
concerns times closer than about ``1e-12 * (t1 - t0)``.

Draws are made on the CPU in float64 and then cast, so one seed gives the same path (up to the cast) in
float32 and float64 and on every device.
"""

from __future__ import annotations

import math
import struct
from collections import OrderedDict
from typing import Optional, Sequence, Union

import torch

__all__ = ["BrownianPath"]

_MASK = (1 << 64) - 1


def _mix(*parts: int) -> int:
    """A 63-bit seed from integers (splitmix64 rounds): nearby inputs give unrelated seeds."""
    h = 0x9E3779B97F4A7C15
    for p in parts:
        h = (h ^ (p & _MASK)) & _MASK
        h = (h + 0x9E3779B97F4A7C15) & _MASK
        h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK
        h ^= h >> 31
    return h >> 1  # torch.Generator.manual_seed takes values below 2**63 without wrapping


def _bits(x: float) -> int:
    """The 64 bits of a float64, as an int (a leaf draw's seed includes its exact time)."""
    return struct.unpack("<Q", struct.pack("<d", float(x)))[0]


_ROOT, _NODE, _LEAF = 1, 2, 3  # tags keeping the three kinds of draw apart


class BrownianPath:
    """A Brownian motion ``W`` on ``[t0, t1]`` with independent channels, reproducible from ``seed``.

    Args:
        t0, t1: the interval (floats or 0-dim tensors), ``t0 < t1``.
        size: shape of ``W(t)``, e.g. ``(batch, channels)``; each entry is an independent Brownian motion.
        seed: an integer; the same seed gives the same path whatever the queries.
        dtype: dtype of the returned increments (default: torch's default dtype).
        device: device of the returned increments (default: CPU).
        depth: how many tree levels a non-dyadic query time descends (see the module docstring).
        cache_size: how many tree values to keep; a value dropped from the cache is recomputed
            identically when needed again, so this trades memory for speed only.

    ``path(s, t)`` returns the increment ``W(t) - W(s)``, shape ``size``; ``path(s)`` returns
    ``W(s) - W(t0)``. It has ``shape``, ``dtype``, ``device`` and ``levy_area_approximation`` (``"none"``)
    as torchsde's Brownian motions do, so ``torchsde.sdeint(..., bm=path)`` accepts it.
    """

    levy_area_approximation = "none"

    def __init__(
        self,
        t0: Union[float, torch.Tensor],
        t1: Union[float, torch.Tensor],
        size: Union[int, Sequence[int], torch.Size],
        *,
        seed: int,
        dtype: Optional[torch.dtype] = None,
        device: Optional[Union[str, torch.device]] = None,
        depth: int = 40,
        cache_size: int = 8192,
    ):
        t0, t1 = _as_time(t0, "t0"), _as_time(t1, "t1")
        if not t0 < t1:
            raise ValueError(f"BrownianPath needs t0 < t1; got t0={t0}, t1={t1}: swap them or widen the interval")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int (got {type(seed).__name__}): pass e.g. seed=0")
        if isinstance(size, int):
            size = (size,)
        try:
            size = torch.Size(size)
        except TypeError as err:
            raise TypeError(f"size must be a shape such as (batch, channels); got {size!r}") from err
        if any(n < 0 for n in size):
            raise ValueError(f"size must have non-negative entries; got {tuple(size)}")
        if not (isinstance(depth, int) and 1 <= depth <= 60):
            raise ValueError(f"depth must be an int in [1, 60]; got {depth!r}: the default 40 suits float64 times")
        if not (isinstance(cache_size, int) and cache_size >= 0):
            raise ValueError(f"cache_size must be a non-negative int; got {cache_size!r}")
        self.t0, self.t1 = t0, t1
        self.seed = seed
        self._size = size
        self._dtype = dtype if dtype is not None else torch.get_default_dtype()
        self._device = torch.device(device) if device is not None else torch.device("cpu")
        self.depth = depth
        self._cache: OrderedDict[tuple, torch.Tensor] = OrderedDict()
        self._cache_size = cache_size
        self._zero = torch.zeros(size, dtype=self._dtype, device=self._device)
        self._w1 = math.sqrt(t1 - t0) * self._normal(_ROOT)

    # torchsde's Brownian interface
    @property
    def shape(self) -> torch.Size:
        return self._size

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    @property
    def device(self) -> torch.device:
        return self._device

    def size(self) -> torch.Size:
        return self._size

    def __repr__(self) -> str:
        return (
            f"BrownianPath(t0={self.t0}, t1={self.t1}, size={tuple(self._size)}, seed={self.seed}, "
            f"dtype={self._dtype}, device={self._device})"
        )

    def __call__(self, s, t=None, return_U: bool = False, return_A: bool = False) -> torch.Tensor:
        """``W(t) - W(s)`` (shape ``size``); with ``t`` omitted, ``W(s) - W(t0)``."""
        if return_U or return_A:
            raise ValueError(
                "BrownianPath has no Levy area (return_U/return_A): use a solver that needs increments only "
                "(euler, milstein, reversible_heun), or torchsde's BrownianInterval with levy_area_approximation"
            )
        s = _as_time(s, "s")
        if t is None:
            return self._value(s)
        t = _as_time(t, "t")
        if t < s:
            raise ValueError(f"the query needs s <= t; got s={s}, t={t}: swap them (W(s, t) = -W(t, s))")
        return self._value(t) - self._value(s)

    # the tree
    def _normal(self, *key: int) -> torch.Tensor:
        gen = torch.Generator(device="cpu").manual_seed(_mix(self.seed, *key))
        z = torch.randn(self._size, generator=gen, dtype=torch.float64)
        return z.to(dtype=self._dtype, device=self._device)

    def _value(self, s: float) -> torch.Tensor:
        """``W(s)`` with ``W(t0) = 0``, by descent from the root."""
        if not (self.t0 <= s <= self.t1):
            raise ValueError(
                f"query time {s} lies outside the path's interval [{self.t0}, {self.t1}]: "
                "make the BrownianPath with t0 <= every query time <= t1"
            )
        if s == self.t0:
            return self._zero
        if s == self.t1:
            return self._w1
        a, b, wa, wb = self.t0, self.t1, self._zero, self._w1
        index = 0
        for level in range(self.depth):
            m = 0.5 * (a + b)
            wm = self._node(level, index, a, b, wa, wb)
            if s == m:
                return wm
            if s < m:
                b, wb, index = m, wm, 2 * index
            else:
                a, wa, index = m, wm, 2 * index + 1
        # a leaf: one bridge draw at s itself
        mean = wa + (s - a) / (b - a) * (wb - wa)
        std = math.sqrt(max((s - a) * (b - s) / (b - a), 0.0))
        return mean + std * self._normal(_LEAF, self.depth, index, _bits(s))

    def _node(self, level: int, index: int, a: float, b: float, wa: torch.Tensor, wb: torch.Tensor) -> torch.Tensor:
        key = (level, index)
        cached = self._cache.get(key)
        if cached is not None:
            self._cache.move_to_end(key)
            return cached
        wm = 0.5 * (wa + wb) + math.sqrt(0.25 * (b - a)) * self._normal(_NODE, level, index)
        if self._cache_size:
            self._cache[key] = wm
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return wm


def _as_time(x, name: str) -> float:
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise ValueError(f"{name} must be a scalar time; got a tensor of shape {tuple(x.shape)}")
        return float(x.item())
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return float(x)
    raise TypeError(f"{name} must be a float or a 0-dim tensor; got {type(x).__name__}")
