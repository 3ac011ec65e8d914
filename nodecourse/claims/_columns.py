"""What every report of the ledger shares: its columns, a row's cells, the verdict counts and
the header a published ledger carries (date, mode, machine, software, time)."""

from __future__ import annotations

from nodecourse.claims._registry import ClaimResult
from nodecourse.claims._verdict import ClaimVerdict

__all__ = ["COLUMNS", "report_header", "verdict_counts"]

COLUMNS = ("id", "claim", "source", "published", "threshold", "measured", "verdict")


def _threshold_cell(r: ClaimResult) -> str:
    return "" if r.threshold is None else r.threshold.describe()


def cells(r: ClaimResult) -> list[str]:
    """The text of one result's cells, in :data:`COLUMNS` order."""
    return [r.id, r.claim, r.source, r.published, _threshold_cell(r), r.measured, r.verdict_text]


def verdict_counts(results: list[ClaimResult]) -> str:
    """``"12 hold, 3 hold in part, 2 do not hold, 3 undecided, 1 not measurable at this scale"`` (zeros left out)."""
    words = {
        ClaimVerdict.HOLDS: "hold",
        ClaimVerdict.HOLDS_IN_PART: "hold in part",
        ClaimVerdict.DOES_NOT_HOLD: "do not hold",
        ClaimVerdict.UNDECIDED: "undecided",
        ClaimVerdict.NOT_MEASURABLE: "not measurable at this scale",
        ClaimVerdict.ERROR: "raised an error",
    }
    counts = [(sum(r.verdict is v for r in results), w) for v, w in words.items()]
    return ", ".join(f"{n} {w}" for n, w in counts if n)


def _cpu_model() -> str:
    """The processor's name (Linux's /proc/cpuinfo; ``platform.processor()`` elsewhere)."""
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def report_header(results: list[ClaimResult], *, quick: bool) -> dict[str, str]:
    """What a published ledger must say besides its rows: date (UTC), mode, machine, software, time."""
    import datetime
    import os
    import platform

    import torch

    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "mode": "quick" if quick else "full",
        "machine": f"{_cpu_model()}, {platform.machine()}, {os.cpu_count()} CPU cores, "
        f"{platform.system()} {platform.release()}",
        "torch threads": str(torch.get_num_threads()),
        "software": f"Python {platform.python_version()}, torch {torch.__version__}",
        "total time": f"{sum(r.seconds for r in results):.0f} s for {len(results)} rows",
    }
