"""Solver overhead: solve time over (NFE x the time of one call of the field alone).

A ratio of 1.0 means the solver costs nothing beyond its calls of the field; what
lies above 1.0 is the solver's own work per evaluation (stage combinations, the
error norm, step control, dense output, checks and bookkeeping). Same field, same
tolerances and same output times for every library: dopri5 on the tanh MLP field of
``bench_dopri5.py`` (16 -> 64 -> 64 -> 16), float32, one torch thread, no autograd
graph, states of shape (1, 16) and (512, 16). Batch 512 is also solved with
``per_sample=True`` against torchode (both step each element on its own), compared as
a time ratio. Two rows of issue 29: a *short* solve (batch 1, one interval [0, 0.3]: 26
evaluations, the size of one ODE-RNN update), whose overhead is mostly per-solve set-up and
per-step Python; and ``backend="torchdiffeq"`` against calling torchdiffeq directly (a time
ratio: the wrapper's cost). Runs are interleaved (field alone, nodecourse, torchdiffeq, ...) in one
process after one untimed warm-up each; every figure is the median over the repeats.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_overhead.py [--repeats 15] [--short-only] [--clock cpu]

``--clock cpu`` reads this process's CPU time instead of wall time (on a shared machine the wall
clock also counts the time other jobs hold the cores). ``--short-only`` runs only the rows of
issue 29 (the short solve and its backend row), which take seconds where the batch-512 rows take
minutes. The short rows are followed by a diagnostic that does not decide the target: the same solve
timed with no other library run between its repeats (the declared row runs torchdiffeq between them,
and a solve that starts after other work reads higher).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torchdiffeq

import nodecourse
from bench_dopri5 import MLPField, run_torchode

#: Targets of issue 19: nodecourse's overhead per batch size, and per_sample time / torchode time.
OVERHEAD_TARGETS = {1: 2.0, 512: 1.3}
PER_SAMPLE_TARGET = 1.0
#: Targets of issue 29: the short solve's overhead; backend="torchdiffeq" time / torchdiffeq's own.
SHORT_TARGET = 1.6
SHORT_T1 = 0.3
BACKEND_TARGET = 1.10


def run_nodecourse(field, y0, t, rtol, atol, per_sample=False):
    """Returns ``(ys, calls of the field)``: the solver's NFE plus, in per-sample mode, the one probe
    call that checks the field keeps the rows apart (``stats["nfe_setup"]``)."""
    field.nfe = 0
    sol = nodecourse.odeint(field, y0, t, method="dopri5", rtol=rtol, atol=atol, per_sample=per_sample)
    assert sol.stats["nfe"] + sol.stats.get("nfe_setup", 0) == field.nfe, (sol.stats, field.nfe)
    return sol.ys, field.nfe


def run_nodecourse_per_sample(field, y0, t, rtol, atol):
    return run_nodecourse(field, y0, t, rtol, atol, per_sample=True)


def run_backend_torchdiffeq(field, y0, t, rtol, atol):
    field.nfe = 0
    sol = nodecourse.odeint(field, y0, t, method="dopri5", rtol=rtol, atol=atol, backend="torchdiffeq")
    assert sol.stats["nfe"] == field.nfe, (sol.stats, field.nfe)
    return sol.ys, field.nfe


def run_torchdiffeq(field, y0, t, rtol, atol):
    field.nfe = 0
    ys = torchdiffeq.odeint(field, y0, t, method="dopri5", rtol=rtol, atol=atol)
    return ys, field.nfe


#: The clock every figure is read on: wall time by default; ``--clock cpu`` reads this process's own CPU
#: time (``time.process_time``), which leaves out the time other jobs hold the cores on a shared machine.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]


def field_call_seconds(field, y0: torch.Tensor, t0: torch.Tensor, calls: int) -> float:
    """Seconds per call of ``field(t0, y0)`` alone, averaged over ``calls`` back-to-back calls."""
    start = clock()
    for _ in range(calls):
        field(t0, y0)
    return (clock() - start) / calls


def bench(field, y0, t, rtol, atol, repeats, runners, grad=False):
    """Interleaved repeats of: the field alone (as many calls as nodecourse's solve makes), then
    each runner. Returns ``{library: (NFE, median ms, median overhead ratio)}`` and the median
    ms of one field call; each repeat's ratio uses the field time of the same repeat. ``grad``:
    run everything (the field alone too) with autograd recording, as in training."""
    times = {key: [] for key in runners}
    ratios = {key: [] for key in runners}
    call_times, nfe = [], {}
    t0 = t[0]
    with torch.set_grad_enabled(grad):
        for key, runner in runners.items():  # warm-up, not timed; also fixes the NFE
            nfe[key] = runner(field, y0, t, rtol, atol)[1]
        field_calls = max(nfe.values())
        field_call_seconds(field, y0, t0, 20)
        for _ in range(repeats):
            call = field_call_seconds(field, y0, t0, field_calls)
            call_times.append(call)
            for key, runner in runners.items():
                start = clock()
                _, n = runner(field, y0, t, rtol, atol)
                elapsed = clock() - start
                times[key].append(elapsed)
                ratios[key].append(elapsed / (n * call))
                nfe[key] = n
    rows = {key: (nfe[key], statistics.median(times[key]) * 1e3, statistics.median(ratios[key])) for key in runners}
    return rows, statistics.median(call_times) * 1e3


def verdict(value: float, target: float) -> str:
    return f"{'meets' if value <= target else 'misses'} <= {target:g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-7)
    parser.add_argument(
        "--grad",
        action="store_true",
        help="record the autograd graph (the field's parameters require grad), as in training",
    )
    parser.add_argument(
        "--short-only",
        action="store_true",
        help="only the short solve's rows (nodecourse, torchdiffeq, backend='torchdiffeq')",
    )
    parser.add_argument(
        "--clock",
        choices=tuple(CLOCKS),
        default="wall",
        help="wall time, or this process's CPU time (steadier on a machine shared with other jobs)",
    )
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    field = MLPField()
    t = torch.linspace(0.0, 5.0, 10)
    base = {
        "nodecourse": run_nodecourse,
        "torchdiffeq": run_torchdiffeq,
        "nodecourse backend=torchdiffeq": run_backend_torchdiffeq,
    }
    per_sample = {"nodecourse per_sample": run_nodecourse_per_sample, "torchode": run_torchode}
    results = []
    for batch in () if args.short_only else OVERHEAD_TARGETS:
        runners = {**base, **per_sample} if batch == 512 else base
        rows, call_ms = bench(
            field, torch.randn(batch, 16), t, args.rtol, args.atol, args.repeats, runners, grad=args.grad
        )
        results.append((batch, rows, call_ms))
    short_t = torch.tensor([0.0, SHORT_T1])
    short_y0 = torch.randn(1, 16, generator=torch.Generator().manual_seed(0))  # its own draw: 26 evaluations
    short, short_call_ms = bench(field, short_y0, short_t, args.rtol, args.atol, 4 * args.repeats, base, grad=args.grad)
    # A diagnostic beside the declared row (which alone decides the target): the same solve with no other
    # library run between its repeats, only the field's own timing. The difference between the two readings
    # is what the solve pays for starting with its code and data out of the caches.
    alone, alone_call_ms = bench(
        field, short_y0, short_t, args.rtol, args.atol, 4 * args.repeats, {"nodecourse": run_nodecourse}, grad=args.grad
    )

    print(
        f"dopri5, rtol={args.rtol:g} atol={args.atol:g}, float32, 10 output times on [0, 5], "
        f"{'autograd recording' if args.grad else 'no autograd'}, {args.clock} clock, "
        f"median of {args.repeats} interleaved runs, torch threads={torch.get_num_threads()}, "
        f"torch {torch.__version__}, torchdiffeq {torchdiffeq.__version__}"
    )
    print("| batch | library | NFE | median ms | one field call ms | overhead = time / (NFE x call) |")
    print("|---|---|---|---|---|---|")
    for batch, rows, call_ms in results:
        for key, (n, ms, ratio) in rows.items():
            print(f"| {batch} | {key} | {n} | {ms:.1f} | {call_ms:.3f} | {ratio:.2f} |")
    for key, (n, ms, ratio) in short.items():
        print(f"| 1, short [0, {SHORT_T1:g}] | {key} | {n} | {ms:.2f} | {short_call_ms:.3f} | {ratio:.2f} |")
    n, ms, ratio = alone["nodecourse"]
    print(
        f"| 1, short [0, {SHORT_T1:g}] | nodecourse, no other library between | {n} | {ms:.2f} "
        f"| {alone_call_ms:.3f} | {ratio:.2f} |"
    )
    print()
    print("targets:")
    for batch, rows, _ in results:
        ratio = rows["nodecourse"][2]
        print(
            f"  batch {batch}: nodecourse overhead {ratio:.2f} ({verdict(ratio, OVERHEAD_TARGETS[batch])}); "
            f"torchdiffeq {rows['torchdiffeq'][2]:.2f}"
        )
    ratio = short["nodecourse"][2]
    print(
        f"  batch 1, short solve ({short['nodecourse'][0]} evaluations): nodecourse overhead {ratio:.2f} "
        f"({verdict(ratio, SHORT_TARGET)}); torchdiffeq {short['torchdiffeq'][2]:.2f}"
    )
    print(
        f"  (diagnostic, not the target's reading) the same solve with no other library run between its repeats: "
        f"{alone['nodecourse'][2]:.2f}"
    )
    for label, rows in [(f"batch {b}", r) for b, r, _ in results] + [("batch 1, short", short)]:
        backend = rows["nodecourse backend=torchdiffeq"][1] / rows["torchdiffeq"][1]
        print(
            f"  {label}: backend='torchdiffeq' time / torchdiffeq's = {backend:.2f} "
            f"({verdict(backend, BACKEND_TARGET)})"
        )
    if args.short_only:
        return
    rows = results[-1][1]
    time_ratio = rows["nodecourse per_sample"][1] / rows["torchode"][1]
    print(
        f"  batch 512 per_sample: time / torchode's = {time_ratio:.2f} ({verdict(time_ratio, PER_SAMPLE_TARGET)}); "
        f"NFE {rows['nodecourse per_sample'][0]} vs {rows['torchode'][0]}"
    )


if __name__ == "__main__":
    main()
