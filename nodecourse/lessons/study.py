"""What every lesson's studies share: one cache with a visible ``clear()``, and findings that render themselves.

A *study* is a function that measures something (trains models, runs solves) and returns a frozen,
typed result. :func:`cached_study` memoises it on its arguments, so a lesson's figure, its findings
and its ledger row read one run; :func:`clear` forgets every study's results (for instance after
changing torch's thread count, or to time a study from scratch).

*Findings* are frozen dataclasses computed from a study's result: verdicts and the numbers a
sentence quotes. :class:`Findings` gives them :meth:`~Findings.markdown` and the notebook display,
so a lesson cell shows them in one line (``findings``) instead of assembling prose from lookups.
"""

from __future__ import annotations

import abc
import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Findings", "cached_study", "clear", "cached_studies"]

F = TypeVar("F", bound=Callable[..., Any])

# Arguments that change how a study reports progress, not what it measures: never part of a key.
NOT_IN_KEY = frozenset({"progress"})

_STUDIES: list[Callable[..., Any]] = []


def cached_study(fn: F) -> F:
    """Memoise ``fn`` on its arguments (bound to its signature, defaults filled in, ``progress`` left out).

    Every argument that is part of the key must be hashable (configs are frozen dataclasses). The
    wrapper gains ``clear()`` (this study only) and ``cache_size()``.
    """
    signature = inspect.signature(fn)
    results: dict[tuple, Any] = {}

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = tuple((name, value) for name, value in bound.arguments.items() if name not in NOT_IN_KEY)
        try:
            hash(key)
        except TypeError as err:
            raise TypeError(
                f"{fn.__qualname__}: every argument of a cached study must be hashable "
                f"(pass a frozen config, a tuple or a string): {err}"
            ) from None
        if key not in results:
            results[key] = fn(*args, **kwargs)
        return results[key]

    wrapper.clear = results.clear  # type: ignore[attr-defined]
    wrapper.cache_size = results.__len__  # type: ignore[attr-defined]
    _STUDIES.append(wrapper)
    return wrapper  # type: ignore[return-value]


def cached_studies() -> tuple[Callable[..., Any], ...]:
    """Every study decorated with :func:`cached_study` so far (in the order they were defined)."""
    return tuple(_STUDIES)


def clear() -> None:
    """Forget every cached study result, in every lesson."""
    for study in _STUDIES:
        study.clear()  # type: ignore[attr-defined]


class Findings(abc.ABC):
    """Base of a lesson's findings (subclasses are frozen dataclasses): Markdown and the notebook display."""

    @abc.abstractmethod
    def markdown(self) -> str:
        """The findings as Markdown: the sentences and tables the lesson shows, numbers included."""

    def _repr_markdown_(self) -> str:
        return self.markdown()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, str]:
        # text/plain is the same Markdown, not the dataclass repr (every field, every float: up to
        # 100 kB a cell), which a saved notebook would carry beside it. A bundle, because IPython's
        # text/plain printer prefers the dataclass's own __repr__ to an inherited _repr_pretty_.
        text = self.markdown()
        return {"text/markdown": text, "text/plain": text}

    def __str__(self) -> str:
        return self.markdown()
