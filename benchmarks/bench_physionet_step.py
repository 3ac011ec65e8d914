"""ODE-RNN training cost on PhysioNet set A: hourly vs minute grid, three ways of running the solves.

For each quantisation (1 h and 1 min) and each way of running the ODE-RNN pass:

- ``loop``: one ``nodecourse.odeint`` call per gap between union times, the full GRU cell at
  each time (the pass as it was before issue 31: ``RecurrentEncoder(fast=False)``);
- ``torchdiffeq``: the same loop, every solve run by torchdiffeq (``backend="torchdiffeq"``);
- ``fast``: the default pass (``fast=True``): the GRU's input half for all times in one product,
  a gap of at most one Euler step taken as that step without a solver call, times as floats.

it trains one model at the published sizes (``PHYSIONET_PUBLISHED``: state 20, field 50 x 3 layers,
gated-MLP update of 50 units, Adamax) on the same seeded patients in batches of 50 and prints
the median training step (forward, backward, optimiser step) and the epoch over all patients,
in wall-clock and CPU seconds, with the NFE per batch and the share of the *forward* pass
spent outside the vector field's own calls (the field's forward is timed by a wrapper; the
backward is not split). The three ways give the same states up to rounding (tests check
``fast`` against ``loop``); only the time differs.

    OMP_NUM_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/bench_physionet_step.py --patients 200

On a shared machine wall time overstates the cost; the CPU column is this process's own time.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from nodecourse.data import physionet
from nodecourse.models import PHYSIONET_PUBLISHED, latent

WAYS = ("loop", "torchdiffeq", "fast")


class TimedField(torch.nn.Module):
    """Wraps a vector field and adds up the wall time of its forward calls."""

    def __init__(self, func: torch.nn.Module):
        super().__init__()
        self.func = func
        self.seconds = 0.0

    def forward(self, t, h):
        start = time.perf_counter()
        out = self.func(t, h)
        self.seconds += time.perf_counter() - start
        return out


def load(quantization: float, patients: int, seed: int):
    data = physionet.load("set-a", quantization=quantization, progress=False, verbose=False).sample(patients, seed=seed)
    return physionet.Normalizer.fit(data).transform(data)


def measure(data, way: str, batch_size: int, seed: int) -> dict:
    """Train one epoch over ``data`` the ``way`` given; per-step and epoch times, NFE, share outside the field."""
    model = latent.build_model("odernn", data, settings=PHYSIONET_PUBLISHED, seed=seed)
    enc = model.encoder
    enc.fast = way == "fast"
    enc.backend = "torchdiffeq" if way == "torchdiffeq" else "nodecourse"
    timed = TimedField(enc.func)
    enc.func = timed
    opt, _, per_step = latent.make_optimizer(model, PHYSIONET_PUBLISHED, epochs=1)
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(seed))
    steps, cpu_steps, forward_s, field_s = [], [], 0.0, 0.0
    epoch_wall, epoch_cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(data), batch_size):
        idx = order[i : i + batch_size]
        wall, cpu = time.perf_counter(), time.process_time()
        timed.seconds = 0.0
        logits = model(data.times, data.values[idx], data.mask[idx], data.static[idx], data.static_mask[idx])
        forward_s += time.perf_counter() - wall
        field_s += timed.seconds
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, data.labels[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        per_step.step()
        steps.append(time.perf_counter() - wall)
        cpu_steps.append(time.process_time() - cpu)
    n_batches = len(steps)
    return {
        "way": way,
        "step_s": statistics.median(steps),
        "step_cpu_s": statistics.median(cpu_steps),
        "epoch_s": time.perf_counter() - epoch_wall,
        "epoch_cpu_s": time.process_time() - epoch_cpu,
        "nfe_per_batch": enc.solver_stats["nfe"] / n_batches,
        "solves_per_batch": enc.solver_stats["n_solves"] / n_batches,
        "outside_field_forward": 1.0 - field_s / forward_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=200, help="seeded patients of set A (default 200)")
    parser.add_argument("--batch-size", type=int, default=PHYSIONET_PUBLISHED.batch_size)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--grids", nargs="+", default=["hour", "minute"], choices=["hour", "minute"])
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(
        f"ODE-RNN at PHYSIONET_PUBLISHED sizes, {args.patients} patients of set A, batches of {args.batch_size}, "
        f"{torch.get_num_threads()} torch thread(s)"
    )
    print(
        f"{'grid':>6} {'way':>11} {'step s':>8} {'step CPU s':>10} {'epoch s':>8} {'epoch CPU s':>11} "
        f"{'NFE/batch':>9} {'solves/batch':>12} {'outside field (fwd)':>19}"
    )
    for grid in args.grids:
        data = load(1.0 if grid == "hour" else 1 / 60, args.patients, args.seed)
        for way in args.ways:
            r = measure(data, way, args.batch_size, args.seed)
            print(
                f"{grid:>6} {way:>11} {r['step_s']:8.3f} {r['step_cpu_s']:10.3f} {r['epoch_s']:8.2f} "
                f"{r['epoch_cpu_s']:11.2f} {r['nfe_per_batch']:9.0f} {r['solves_per_batch']:12.0f} "
                f"{r['outside_field_forward']:19.0%}",
                flush=True,
            )


if __name__ == "__main__":
    main()
