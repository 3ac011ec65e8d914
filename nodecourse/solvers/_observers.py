"""Who is listening to solves: :class:`nodecourse.measure.SolverWorkLog` registers here.

Kept apart from ``diagnostics`` so that ``odeint`` can report without importing it.
"""

from __future__ import annotations

from typing import Any, Callable

_LISTENERS: list[Callable[[dict[str, Any]], None]] = []


def add_listener(listener: Callable[[dict[str, Any]], None]) -> None:
    _LISTENERS.append(listener)


def remove_listener(listener: Callable[[dict[str, Any]], None]) -> None:
    # Remove this exact listener (the most recent registration), not an equal one.
    for i in range(len(_LISTENERS) - 1, -1, -1):
        if _LISTENERS[i] is listener:
            del _LISTENERS[i]
            return


def listening() -> bool:
    return bool(_LISTENERS)


def notify(record: dict[str, Any]) -> None:
    for listener in list(_LISTENERS):
        listener(record)
