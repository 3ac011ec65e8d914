"""Drawing task inputs from a seed, the same way in every process."""
from __future__ import annotations

import torch

F64 = torch.float64


def generator(seed: int, salt: int) -> torch.Generator:
    """A generator for one task's inputs (``salt`` tells the tasks of a seed apart)."""
    return torch.Generator().manual_seed((seed * 7919 + salt) % (2 ** 63))


def uniform(g: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * float(torch.rand((), generator=g, dtype=F64))


def integer(g: torch.Generator, low: int, high: int) -> int:
    """An integer in [low, high]."""
    return int(torch.randint(low, high + 1, (1,), generator=g))


def odeint_last(f, y0, t0: float, t1: float, **kw) -> torch.Tensor:
    """The library's solution at ``t1`` (float64 times)."""
    from nodecourse import odeint

    return odeint(f, y0, torch.tensor([t0, t1], dtype=F64), **kw).ys[-1]
