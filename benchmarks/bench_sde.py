"""nodecourse.sde.sdeint against torchsde.sdeint on the same SDE and the same Brownian path.

The SDE is a small neural SDE in torchsde's own style (drift and diagonal diffusion each a tanh MLP,
8 -> 32 -> 8), a batch of 256 states, on [0, 1] with dt = 2^-7 and 9 output times. Both libraries get
the same ``BrownianPath`` object (its increments are cached after the first query, so every run after
the warm-up reads the same numbers), so their outputs must agree to rounding: the script checks that
before it times anything. Runs are interleaved (nodecourse, torchsde, nodecourse, ...) in one process
and the median wall time of each is reported with the ratio nodecourse / torchsde, forward only and
forward + backward (backprop through the solver's operations).

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_sde.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torchsde

from nodecourse.sde import BrownianPath, sdeint

DIM, HIDDEN, BATCH = 8, 32, 256


class NeuralSDE(torch.nn.Module):
    """dy = f(y) dt + g(y) dW, diagonal noise; Ito (euler, milstein)."""

    noise_type, sde_type = "diagonal", "ito"

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.drift = torch.nn.Sequential(torch.nn.Linear(DIM, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, DIM))
        self.diffusion = torch.nn.Sequential(
            torch.nn.Linear(DIM, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, DIM), torch.nn.Sigmoid()
        )

    def f(self, t, y):
        return self.drift(y)

    def g(self, t, y):
        # diagonal: entry i of g must depend on entry i of y only; a per-entry scale keeps that exact
        return 0.3 * torch.sigmoid(y) * self.diffusion(torch.ones_like(y))


def run(library: str, method: str, sde, y0, ts, bm, dt: float, backward: bool) -> tuple[float, torch.Tensor]:
    y = y0.clone().requires_grad_(backward)
    start = time.perf_counter()
    if library == "nodecourse":
        ys = sdeint(sde, y, ts, method=method, dt=dt, bm=bm).ys
    else:
        ys = torchsde.sdeint(sde, y, ts, method=method, dt=dt, bm=bm)
    if backward:
        ys.pow(2).mean().backward()
    return time.perf_counter() - start, ys.detach()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    torch.set_num_threads(1)
    sde = NeuralSDE()
    y0 = torch.randn(BATCH, DIM, generator=torch.Generator().manual_seed(1))
    ts = torch.linspace(0.0, 1.0, 9)
    dt = 2.0**-7
    bm = BrownianPath(0.0, 1.0, (BATCH, DIM), seed=3, dtype=y0.dtype)
    print(f"torch {torch.__version__}, torchsde {torchsde.__version__}, batch {BATCH}, dt 2^-7, {args.repeats} repeats")
    print("| method | pass | nodecourse (ms) | torchsde (ms) | nodecourse / torchsde | max |ys difference| |")
    print("|---|---|---|---|---|---|")
    for method in ("euler", "milstein"):
        for backward in (False, True):
            _, ours = run("nodecourse", method, sde, y0, ts, bm, dt, backward)  # warm-up, fills the path's cache
            _, theirs = run("torchsde", method, sde, y0, ts, bm, dt, backward)
            gap = float((ours - theirs).abs().max())
            assert gap < 1e-4, f"{method}: the two solves differ by {gap:.2e} on the same path"
            times = {"nodecourse": [], "torchsde": []}
            for _ in range(args.repeats):
                for library in times:
                    times[library].append(run(library, method, sde, y0, ts, bm, dt, backward)[0])
            a, b = (statistics.median(times[k]) * 1e3 for k in ("nodecourse", "torchsde"))
            label = "forward + backward" if backward else "forward"
            print(f"| {method} | {label} | {a:.1f} | {b:.1f} | {a / b:.2f} | {gap:.1e} |")


if __name__ == "__main__":
    main()
