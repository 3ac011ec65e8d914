"""Drawing task inputs from a seed, the same way in every process."""

from __future__ import annotations

import torch

F64 = torch.float64


def generator(seed: int, salt: int) -> torch.Generator:
    """A generator for one task's inputs (``salt`` tells the tasks of a seed apart)."""
    return torch.Generator().manual_seed((seed * 7919 + salt) % (2**63))


def uniform(g: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * float(torch.rand((), generator=g, dtype=F64))


def integer(g: torch.Generator, low: int, high: int) -> int:
    """An integer in [low, high]."""
    return int(torch.randint(low, high + 1, (1,), generator=g))


def odeint_last(f, y0, t0: float, t1: float, **kw) -> torch.Tensor:
    """The library's solution at ``t1`` (float64 times)."""
    from nodecourse import odeint

    return odeint(f, y0, torch.tensor([t0, t1], dtype=F64), **kw).ys[-1]


REDRAW_TRIES = 50


class NoDecidableDraw(RuntimeError):
    """No draw of a task's inputs met its decidability condition: a fault of the check, never of an answer."""


def redraw(seed: int, salt: int, build, decidable, tries: int = REDRAW_TRIES):
    """``build(g)`` for successive generators of ``seed`` until ``decidable(candidate)`` holds.

    The first try uses :func:`generator` itself (a seed whose first draw was decidable keeps its
    inputs); later tries use generators derived from ``(seed, salt, try)``, so every process draws
    the same inputs from a seed. :class:`NoDecidableDraw` after ``tries`` rejected draws."""
    for attempt in range(tries):
        g = generator(seed, salt) if attempt == 0 else generator(seed, salt + 1_000_003 * attempt)
        candidate = build(g)
        if decidable(candidate):
            return candidate
    raise NoDecidableDraw(f"no decidable inputs in {tries} draws for seed {seed} (salt {salt})")
