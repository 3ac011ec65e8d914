"""Re-execute lessons in quick mode and strip volatile output (``make notebooks``).

    python scripts/execute_notebooks.py                       # every lesson in notebooks/
    python scripts/execute_notebooks.py notebooks/04_adjoint.ipynb

Exits 1 when a saved notebook is still not clean (too large, a machine path
in an output, ...); the message names the cell.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from nodecourse.course.notebook_hygiene import execute

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="lesson notebooks (default: every one in notebooks/)")
    paths = parser.parse_args(argv).notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
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
