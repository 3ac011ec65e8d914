"""Running the ledger: :func:`run_claims` (the CLI and the tests), :func:`show` (a lesson's rows
in its notebook)."""

from __future__ import annotations

import sys
import time
from typing import Iterable

from nodecourse.claims.html_report import html_table
from nodecourse.claims.registry import ClaimResult, check_unrun_scale, load_rows
from nodecourse.claims.text_report import format_table
from nodecourse.claims.verdict import ClaimVerdict, Measurement


def run_claims(
    only: Iterable[str] | None = None,
    *,
    quick: bool = True,
    progress: bool = False,
    keep_going: bool = False,
) -> list[ClaimResult]:
    """Run the selected rows (all when ``only`` is None) and return their results in ledger order.

    ``progress`` shows a tqdm bar (on stderr) whose description names the row
    running. With ``keep_going`` a row that raises is recorded with verdict
    :attr:`ClaimVerdict.ERROR` (the exception in ``measured``) and the rest still run;
    without it the exception propagates.
    """
    registry = load_rows()
    ids = list(registry) if only is None else list(only)
    unknown = [i for i in ids if i not in registry]
    if unknown:
        raise ValueError(f"unknown claim id(s) {unknown}; valid ids: {sorted(registry)}")
    results = []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(ids), desc="claims", unit="claim", file=sys.stderr)
    try:
        for cid in ids:
            if bar is not None:
                # Name the row running: rows take seconds to minutes, a bare counter says nothing.
                bar.set_description(f"claims: {cid}")
            spec = registry[cid]
            start = time.perf_counter()
            try:
                m = spec.measure(quick)
                if not isinstance(m.verdict, ClaimVerdict) or m.verdict is ClaimVerdict.ERROR:
                    raise TypeError(
                        f"claim {cid!r} returned verdict {m.verdict!r}; expected one of "
                        f"{[v for v in ClaimVerdict if v is not ClaimVerdict.ERROR]}"
                    )
                check_unrun_scale(spec, m)
            except Exception as exc:  # noqa: BLE001 - recorded, not swallowed: the verdict says error
                if not keep_going:
                    raise
                import traceback

                traceback.print_exc(file=sys.stderr)
                m = Measurement(
                    f"the row raised {type(exc).__name__}: {exc}", ClaimVerdict.ERROR, {"exception": type(exc).__name__}
                )
            results.append(
                ClaimResult(
                    spec.id,
                    spec.claim,
                    spec.source,
                    spec.published,
                    m.measured,
                    m.verdict,
                    time.perf_counter() - start,
                    m.details,
                    spec.threshold,
                    m.seeds,
                    m.unit,
                )
            )
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.set_description("claims")
            bar.close()
    return results


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
