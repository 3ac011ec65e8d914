"""Running the ledger: :func:`run_claims` (the CLI and the tests), :func:`show` (a lesson's rows
in its notebook)."""

from __future__ import annotations

import sys
from typing import Iterable

from nodecourse.claims._executors import EXECUTORS, RowCache, run_ray, run_serial
from nodecourse.claims._html_report import html_table
from nodecourse.claims._registry import ClaimResult, load_rows
from nodecourse.claims._text_report import format_table

__all__ = ["run_claims", "show"]


def run_claims(
    only: Iterable[str] | None = None,
    *,
    quick: bool = True,
    progress: bool = False,
    keep_going: bool = False,
    executor: str = "serial",
    address: str | None = None,
    workers: int | None = None,
    cache_dir: str | None = None,
) -> list[ClaimResult]:
    """Run the selected rows (all when ``only`` is None) and return their results in ledger order.

    ``progress`` shows a tqdm bar (on stderr) of the rows done: it names the row running
    (``"serial"``) or how many run at once (``"ray"``). With ``keep_going`` a row that raises is
    recorded with verdict :attr:`ClaimVerdict.ERROR` (the exception in ``measured``) and the rest
    still run; without it the exception propagates (under Ray, after the other tasks are cancelled).

    ``executor``: ``"serial"`` runs the rows one after another here; ``"ray"`` runs each row as one
    Ray task (:func:`~nodecourse.claims._executors.run_ray`): on a local runtime with ``workers``
    CPUs when ``address`` is None, else on the cluster at ``address``. The split is per row, not
    per (row, seed): a row's ``measure`` judges its seeds together, so every verdict is still the
    row's own and the list returned is the one a serial run returns (the ``seconds`` aside).

    ``cache_dir``: a folder of finished rows (:class:`~nodecourse.claims._executors.RowCache`,
    keyed by row id, quick or full, and the package's code version); rows found there are not
    run again, and each row that finishes is saved there as it finishes.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor={executor!r} is not one of {EXECUTORS}; e.g. executor='ray'")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers={workers!r} must be a positive integer (or None: every CPU), e.g. workers=2")
    if executor == "serial" and (address is not None or workers is not None):
        raise ValueError("address and workers apply to executor='ray'; give executor='ray' or drop them")
    registry = load_rows()
    ids = list(registry) if only is None else list(only)
    unknown = [i for i in ids if i not in registry]
    if unknown:
        raise ValueError(f"unknown claim id(s) {unknown}; valid ids: {sorted(registry)}")
    cache = None if cache_dir is None else RowCache(cache_dir)
    found = {} if cache is None else {i: cache.load(registry[i], quick) for i in ids}
    todo = [registry[i] for i in ids if found.get(i) is None]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), desc="claims", unit="claim", file=sys.stderr)

    def done(result: ClaimResult) -> None:
        if cache is not None:
            cache.save(result, quick)
        if bar is not None:
            bar.update(1)

    try:
        if not todo:  # every row came from the cache: start no runtime
            ran = []
        elif executor == "ray":
            ran = run_ray(todo, quick, keep_going, done, bar, address=address, workers=workers)
        else:
            ran = run_serial(todo, quick, keep_going, done, bar)
    finally:
        if bar is not None:
            bar.set_description("claims")
            bar.close()
    fresh = {r.id: r for r in ran}
    return [found.get(i) or fresh[i] for i in ids]


def show(ids: Iterable[str], *, quick: bool | None = None):
    """Run rows and display them in a notebook as a small table (pandas-free HTML, escaped)."""
    from nodecourse.config import quick_mode

    results = run_claims(ids, quick=quick_mode() if quick is None else quick)
    try:
        from IPython.display import HTML, display

        display(HTML(html_table(results, columns=("claim", "source", "published", "threshold", "measured", "verdict"))))
    except ImportError:
        print(format_table(results))
    return results
