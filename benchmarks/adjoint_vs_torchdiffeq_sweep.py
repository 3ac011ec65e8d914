"""The course's adjoint beside torchdiffeq's over a grid of settings (issue 38, item 2).

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/adjoint_vs_torchdiffeq_sweep.py [--markdown FILE]

Runs :data:`nodecourse.measure._adjoint_sweep.FULL_GRID` (3 problems x 2 dtypes x 4 rtols x 3 atols x 5
horizons) and prints the summary: how often each adjoint returned a gradient, the settings that miss the
criterion declared in :mod:`nodecourse.measure._adjoint_sweep`, and the ratio of the two errors. ``--markdown``
writes the whole table. ``--quick`` runs the test's sub-grid instead.
"""

from __future__ import annotations

import argparse
import sys

import torch

from nodecourse.measure._adjoint_sweep import FULL_GRID, TEST_GRID, summary, sweep, table_text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", help="write the whole table (markdown) to this file")
    parser.add_argument("--quick", action="store_true", help="the test's sub-grid only")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = sweep(TEST_GRID if args.quick else FULL_GRID, progress=sys.stderr.isatty())
    print(summary(rows))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table_text(rows) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
