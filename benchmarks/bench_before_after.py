"""The short solve of ``bench_overhead.py`` with the solvers of an earlier commit and with the working
tree's, interleaved in one process: the before/after comparison that a loaded machine leaves readable
(``--long``: the batch-1 solve of ``bench_overhead.py`` instead).

The package at ``--before`` (a git revision) is extracted into a temporary folder and imported under
another name (``nodecourse_before``), so both versions run side by side on the same field, the same
state and the same tolerances (dopri5, batch 1, [0, 0.3], 26 evaluations). Each repeat times the field
alone (26 back-to-back calls), then one solve with each version; a version's overhead is its solve time
over (NFE x that repeat's field call), and the time ratio after / before is taken per repeat. Every
figure is the median over the repeats, with the quartiles. ``--clock cpu`` (the default) reads this
process's CPU time, which leaves out the time other jobs hold the cores; ``--grad`` records the
autograd graph, as in training.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_before_after.py --before 1853a1f [--repeats 200]
"""

from __future__ import annotations

import argparse
import importlib
import io
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import torch

import nodecourse
from bench_dopri5 import MLPField

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def import_revision(revision: str, folder: Path):
    """The ``nodecourse`` package of ``revision``, imported as ``nodecourse_before`` from ``folder``."""
    archive = subprocess.run(["git", "archive", revision, "nodecourse"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    (folder / "nodecourse").rename(folder / "nodecourse_before")
    for path in (folder / "nodecourse_before").rglob("*.py"):
        path.write_text(re.sub(r"\bnodecourse\b", "nodecourse_before", path.read_text()))
    sys.path.insert(0, str(folder))
    return importlib.import_module("nodecourse_before")


def quartiles(values: list[float]) -> str:
    low, mid, high = statistics.quantiles(values, n=4)
    return f"median {statistics.median(values):.3f} (quartiles {low:.3f}-{high:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="git revision of the solvers to compare against")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu")
    parser.add_argument("--grad", action="store_true", help="record the autograd graph, as in training")
    parser.add_argument(
        "--long",
        action="store_true",
        help="bench_overhead's batch-1 solve instead (10 output times on [0, 5], 158 evaluations)",
    )
    args = parser.parse_args()
    clock = CLOCKS[args.clock]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    field = MLPField()
    if args.long:  # bench_overhead's first draw after seeding, and its output times
        y0, t = torch.randn(1, 16), torch.linspace(0.0, 5.0, 10)
    else:  # bench_overhead's short solve
        y0, t = torch.randn(1, 16, generator=torch.Generator().manual_seed(0)), torch.tensor([0.0, 0.3])
    with tempfile.TemporaryDirectory() as folder:
        before = import_revision(args.before, Path(folder))
        versions = {f"before ({args.before})": before.odeint, "after (working tree)": nodecourse.odeint}
        overhead = {name: [] for name in versions}
        time_ratio, nfe = [], {}
        with torch.set_grad_enabled(args.grad):
            for name, odeint in versions.items():  # warm-up, not timed
                for _ in range(20):
                    nfe[name] = odeint(field, y0, t, rtol=1e-5, atol=1e-7).stats["nfe"]
            calls = max(nfe.values())
            t0 = t[0]  # indexed once, as in bench_overhead (an index per call would add to the field's time)
            for _ in range(args.repeats):
                start = clock()
                for _ in range(calls):
                    field(t0, y0)
                call = (clock() - start) / calls
                seconds = {}
                for name, odeint in versions.items():
                    start = clock()
                    odeint(field, y0, t, rtol=1e-5, atol=1e-7)
                    seconds[name] = clock() - start
                    overhead[name].append(seconds[name] / (nfe[name] * call))
                first, second = seconds.values()
                time_ratio.append(second / first)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    problem = "10 output times on [0, 5]" if args.long else "[0, 0.3]"
    print(
        f"dopri5, batch 1, {problem}, {args.clock} clock, "
        f"{'autograd recording' if args.grad else 'no autograd'}, {args.repeats} interleaved repeats, "
        f"load average {' '.join(load)}, torch {torch.__version__}"
    )
    for name, values in overhead.items():
        print(f"  {name}: NFE {nfe[name]}, overhead = time / (NFE x call) {quartiles(values)}")
    print(f"  time after / before: {quartiles(time_ratio)}")


if __name__ == "__main__":
    main()
