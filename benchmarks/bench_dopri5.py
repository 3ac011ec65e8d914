"""nodecourse dopri5 against torchdiffeq and torchode on the same problems and tolerances.

Problems: (a) one 16-d trajectory of a small tanh MLP field, (b) a batch of 512
such states, solved with one step size for the batch and, beside torchode (which
always steps each element on its own), with ``per_sample=True``; plus a stiff
scalar problem (explicit pair vs implicit method). Runs are interleaved
(A, B, C, A, B, C, ...) in one process and the median wall time of each is
reported, with NFE and ratios to torchdiffeq.

    OMP_NUM_THREADS=1 python benchmarks/bench_dopri5.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
import torchdiffeq

import nodecourse


class MLPField(torch.nn.Module):
    """f(t, z) = W3 tanh(W2 tanh(W1 z) + b2) + b3, 16 -> 64 -> 64 -> 16.

    Weights ~ N(0, gain^2 / fan_in): gain 2 gives dynamics with a few dozen
    dopri5 steps on [0, 5], like a partly trained field (the default init is
    nearly linear and takes a handful of steps, which measures only set-up).
    """

    def __init__(self, dim: int = 16, hidden: int = 64, gain: float = 2.0):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(dim, hidden),
            torch.nn.Tanh(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.Tanh(),
            torch.nn.Linear(hidden, dim),
        )
        with torch.no_grad():
            for layer in self.net:
                if isinstance(layer, torch.nn.Linear):
                    layer.weight.normal_(0.0, gain / layer.in_features**0.5)
        self.nfe = 0

    def forward(self, t, z):
        self.nfe += 1
        return self.net(z)


def run_nodecourse(field, y0, t, rtol, atol):
    sol = nodecourse.odeint(field, y0, t, method="dopri5", rtol=rtol, atol=atol)
    return sol.ys, sol.stats["nfe"]


def run_torchdiffeq(field, y0, t, rtol, atol):
    field.nfe = 0
    ys = torchdiffeq.odeint(field, y0, t, method="dopri5", rtol=rtol, atol=atol)
    return ys, field.nfe


def run_torchode(field, y0, t, rtol, atol):
    import torchode as to

    field.nfe = 0
    batched = y0 if y0.dim() == 2 else y0.unsqueeze(0)
    term = to.ODETerm(lambda tt, z: field(tt, z))
    solver = to.AutoDiffAdjoint(to.Dopri5(term=term), to.IntegralController(atol=atol, rtol=rtol, term=term))
    t_eval = t.unsqueeze(0).expand(batched.shape[0], -1)
    sol = solver.solve(to.InitialValueProblem(y0=batched, t_eval=t_eval))
    ys = sol.ys.transpose(0, 1)
    return (ys if y0.dim() == 2 else ys[:, 0]), field.nfe


def run_nodecourse_per_sample(field, y0, t, rtol, atol):
    sol = nodecourse.odeint(lambda tt, z: field(tt, z), y0, t, method="dopri5", rtol=rtol, atol=atol, per_sample=True)
    # NFE as torchode counts it: calls of func on the batch.
    return sol.ys, sol.stats["nfe"]


RUNNERS = {"nodecourse": run_nodecourse, "torchdiffeq": run_torchdiffeq, "torchode": run_torchode}
BATCH_RUNNERS = {**RUNNERS, "nodecourse per_sample": run_nodecourse_per_sample}


def bench(name, field, y0, t, rtol, atol, repeats, runners=RUNNERS):
    """Interleaved repeated runs; rows of (problem, library, NFE, median ms, ratio to torchdiffeq, max error)."""
    times = {k: [] for k in runners}
    nfe, err = {}, {}
    field64 = copy.deepcopy(field).double()
    with torch.no_grad():
        reference = nodecourse.odeint(field64, y0.double(), t.double(), rtol=1e-10, atol=1e-12).ys
        for key, runner in runners.items():  # warm-up, not timed
            runner(field, y0, t, rtol, atol)
        for _ in range(repeats):
            for key, runner in runners.items():
                start = time.perf_counter()
                ys, n = runner(field, y0, t, rtol, atol)
                times[key].append(time.perf_counter() - start)
                nfe[key] = n
                err[key] = float((ys.double() - reference).abs().max())
    base = statistics.median(times["torchdiffeq"])
    rows = []
    for key in runners:
        med = statistics.median(times[key])
        rows.append((name, key, nfe[key], med * 1e3, med / base, err.get(key, float("nan"))))
    return rows


def stiff_rows(lam: float = 1e4, t1: float = 1.0):
    """Steps of the explicit pair against the implicit trapezoidal rule on y' = -lam (y - cos t)."""
    f = lambda t, y: -lam * (y - torch.cos(t))
    y0 = torch.ones(1, dtype=torch.float64)
    t = torch.tensor([0.0, t1], dtype=torch.float64)
    rows = []
    for method in ("dopri5", "trapezoid", "implicit_euler"):
        start = time.perf_counter()
        sol = nodecourse.odeint(f, y0, t, method=method, rtol=1e-3, atol=1e-6, max_steps=100_000)
        rows.append((method, sol.stats["n_steps"], sol.stats["nfe"], time.perf_counter() - start))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--rtol", type=float, default=1e-5)
    parser.add_argument("--atol", type=float, default=1e-7)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    torch.manual_seed(0)
    field = MLPField().to(dtype)
    t = torch.linspace(0.0, 5.0, 10, dtype=dtype)
    rows = bench("(a) single 16-d", field, torch.randn(16, dtype=dtype), t, args.rtol, args.atol, args.repeats)
    rows += bench(
        "(b) batch 512x16",
        field,
        torch.randn(512, 16, dtype=dtype),
        t,
        args.rtol,
        args.atol,
        args.repeats,
        runners=BATCH_RUNNERS,
    )
    print(
        f"dopri5, rtol={args.rtol:g} atol={args.atol:g}, {args.dtype}, 10 output times on [0, 5], "
        f"median of {args.repeats} interleaved runs, torch threads={torch.get_num_threads()}, "
        f"torch {torch.__version__}, torchdiffeq {torchdiffeq.__version__}"
    )
    print("| problem | library | NFE | median ms | time / torchdiffeq | max err vs float64 rtol=1e-10 |")
    print("|---|---|---|---|---|---|")
    for problem, lib, n, ms, ratio, e in rows:
        print(f"| {problem} | {lib} | {n} | {ms:.1f} | {ratio:.2f} | {e:.1e} |")
    print()
    print("stiff: y' = -1e4 (y - cos t), t in [0, 1], rtol=1e-3, atol=1e-6")
    print("| method | steps | NFE | seconds |")
    print("|---|---|---|---|")
    for method, steps, n, sec in stiff_rows():
        print(f"| {method} | {steps} | {n} | {sec:.2f} |")


if __name__ == "__main__":
    main()
