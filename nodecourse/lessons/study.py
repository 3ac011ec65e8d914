"""What every lesson's studies share: one cache with a visible ``clear()``, and findings that render themselves.

A *study* is a function that measures something (trains models, runs solves) and returns a frozen,
typed result. :func:`cached_study` memoises it on its arguments, so a lesson's figure, its findings
and its ledger row read one run; :func:`clear` forgets every study's results (for instance after
changing torch's thread count, or to time a study from scratch).

The memo lives in one process. When the environment variable ``NODECOURSE_STUDY_CACHE`` names a
folder, a study also keeps its results there, so that other processes (the test suite's workers and
the notebook kernels they start) read one run instead of training the same models again. It is off
unless set; see :func:`cached_study` for the key and what is kept in memory only.

*Findings* are frozen dataclasses computed from a study's result: verdicts and the numbers a
sentence quotes. :class:`Findings` gives them :meth:`~Findings.markdown` and the notebook display,
so a lesson cell shows them in one line (``findings``) instead of assembling prose from lookups.
"""

from __future__ import annotations

import abc
import collections
import dataclasses
import enum
import functools
import hashlib
import inspect
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["CACHE_ENV", "Findings", "cached_study", "clear", "cached_studies", "disk_cache_counts"]

F = TypeVar("F", bound=Callable[..., Any])

# Arguments that change how a study reports progress, not what it measures: never part of a key.
NOT_IN_KEY = frozenset({"progress"})

#: The environment variable that turns on the disk layer: a folder shared by the processes that
#: should read one another's results (unset or empty: results stay in each process's memory).
CACHE_ENV = "NODECOURSE_STUDY_CACHE"

_STUDIES: list[Callable[..., Any]] = []

#: What the disk layer did in this process (see :func:`disk_cache_counts`).
_COUNTS: collections.Counter[str] = collections.Counter()


class _NoStableText(Exception):
    """An argument whose text does not name its value (a tensor, a lambda, an object with an id repr)."""


def _stable_text(value: Any) -> str:
    """A text that names ``value`` in every process, or :class:`_NoStableText`."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__module__}.{type(value).__qualname__}.{value.name}"
    if isinstance(value, tuple):
        return "(" + ", ".join(_stable_text(v) for v in value) + ",)"
    if isinstance(value, frozenset):
        return "frozenset({" + ", ".join(sorted(_stable_text(v) for v in value)) + "})"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        fields = ", ".join(f"{f.name}={_stable_text(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{cls.__module__}.{cls.__qualname__}({fields})"
    if inspect.isfunction(value) or isinstance(value, type):
        if "<locals>" not in value.__qualname__ and "<lambda>" not in value.__qualname__:
            return f"{value.__module__}.{value.__qualname__}"
    if type(value).__module__ == "torch" and type(value).__name__ in ("dtype", "device"):
        return repr(value)
    raise _NoStableText(type(value).__name__)


def _cache_folder() -> Path | None:
    folder = os.environ.get(CACHE_ENV, "").strip()
    return Path(folder) if folder else None


@functools.cache
def _source_digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _disk_key(fn: Callable[..., Any], key: tuple) -> str:
    """The text a study's result is filed under: the study, its module's source, its arguments, and the
    process settings results depend on (quick mode, which some studies read; torch's default dtype)."""
    import torch

    from nodecourse.config import quick_mode

    source = inspect.getsourcefile(fn)
    args = ", ".join(f"{name}={_stable_text(value)}" for name, value in key)
    return (
        f"{fn.__module__}.{fn.__qualname__}({args}) source={_source_digest(source) if source else '?'} "
        f"quick={quick_mode()} dtype={torch.get_default_dtype()}"
    )


def _load(path: Path, text: str) -> tuple[bool, Any]:
    import torch

    if not path.exists():
        return False, None
    try:
        saved = torch.load(path, weights_only=False)
    except Exception:  # a torn or foreign file: compute again and write over it
        _COUNTS["unreadable"] += 1
        return False, None
    if not isinstance(saved, dict) or saved.get("key") != text or "result" not in saved:
        _COUNTS["unreadable"] += 1
        return False, None
    _COUNTS["read"] += 1
    return True, saved["result"]


def _save(path: Path, text: str, result: Any) -> None:
    import torch

    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            torch.save({"key": text, "result": result}, file)
        os.replace(temp, path)
        _COUNTS["written"] += 1
    except Exception:  # a result that cannot be pickled (a local class, a lambda): memory only
        _COUNTS["not_saved"] += 1
        Path(temp).unlink(missing_ok=True)


def _through_disk(fn: Callable[..., Any], key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, or the result another process filed under the same key. One process computes a
    key at a time (a lock file beside the result); the others wait, then read what it wrote."""
    from filelock import FileLock

    folder = _cache_folder()
    try:
        text = _disk_key(fn, key)
    except _NoStableText:
        _COUNTS["not_keyed"] += 1
        return compute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OSError(
            f"{CACHE_ENV}={folder} is not a folder this process can write ({err}): name another, or unset it"
        ) from None
    path = folder / f"{fn.__qualname__}-{hashlib.sha256(text.encode()).hexdigest()[:24]}.pt"
    with FileLock(f"{path}.lock"):
        found, result = _load(path, text)
        if found:
            return result
        _COUNTS["computed"] += 1
        result = compute()
        _save(path, text, result)
        return result


def cached_study(fn: F) -> F:
    """Memoise ``fn`` on its arguments (bound to its signature, defaults filled in, ``progress`` left out).

    Every argument that is part of the key must be hashable (configs are frozen dataclasses). The
    wrapper gains ``clear()`` (this study only) and ``cache_size()``.

    With ``NODECOURSE_STUDY_CACHE`` set to a folder, a result missing from memory is looked up there
    before it is computed, and written there (atomically) after. The file is named by the study's
    module and name, a digest of its module's source, the text of its arguments, quick mode and torch's
    default dtype; torch's thread count is not part of it. Kept in memory only, and counted in
    :func:`disk_cache_counts`: a study defined inside a function, an argument without a stable text (a
    tensor, a lambda), and a result that cannot be pickled. A file that cannot be read is computed
    again and written over. The folder is meant for one session of one checkout: the source digest
    covers the study's own module, not the library code it calls.
    """
    signature = inspect.signature(fn)
    results: dict[tuple, Any] = {}
    # A study cleared in this process computes its results itself from then on (see clear()).
    disk = {"on": "<locals>" not in fn.__qualname__}

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
            if _cache_folder() is None:
                results[key] = fn(*args, **kwargs)
            elif not disk["on"]:
                _COUNTS["not_keyed"] += 1
                results[key] = fn(*args, **kwargs)
            else:
                results[key] = _through_disk(fn, key, lambda: fn(*args, **kwargs))
        return results[key]

    def clear_this_study() -> None:
        results.clear()
        disk["on"] = False

    wrapper.clear = clear_this_study  # type: ignore[attr-defined]
    wrapper.cache_size = results.__len__  # type: ignore[attr-defined]
    _STUDIES.append(wrapper)
    return wrapper  # type: ignore[return-value]


def cached_studies() -> tuple[Callable[..., Any], ...]:
    """Every study decorated with :func:`cached_study` so far (in the order they were defined)."""
    return tuple(_STUDIES)


def clear() -> None:
    """Forget every cached study result, in every lesson, in this process.

    With ``NODECOURSE_STUDY_CACHE`` set, the files stay for other processes, but this process no longer
    reads or writes them: a study cleared here computes its results itself from then on (a study is
    cleared to measure again after changing something, such as the thread count or a patched solver,
    and neither a result filed before the change nor one measured after it belongs to the others).
    """
    for study in _STUDIES:
        study.clear()  # type: ignore[attr-defined]


def disk_cache_counts() -> dict[str, int]:
    """What the ``NODECOURSE_STUDY_CACHE`` layer did in this process: results ``read`` from the folder,
    ``computed`` and ``written`` to it, ``not_saved`` (cannot be pickled), ``not_keyed`` (kept in memory
    only: a study defined in a function, a cleared study, an argument without a stable text) and
    ``unreadable`` files computed again."""
    return dict(_COUNTS)


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
