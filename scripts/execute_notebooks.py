"""Re-execute lessons in quick mode and strip volatile output (``make notebooks``).

    python scripts/execute_notebooks.py                       # every lesson in notebooks/
    python scripts/execute_notebooks.py notebooks/04_adjoint.ipynb

Exits 1 when a saved notebook is still not clean (too large, a machine path
in an output, ...); the message names the cell.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from nodecourse.course.notebook_hygiene import execute

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    bad = 0
    for path in paths:
        start = time.perf_counter()
        found = execute(path)
        status = "clean" if not found else "NOT CLEAN: " + "; ".join(found)
        print(
            f"{path.name}: {time.perf_counter() - start:5.1f} s, {path.stat().st_size / 1e3:.0f} kB, {status}",
            flush=True,
        )
        bad += bool(found)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
