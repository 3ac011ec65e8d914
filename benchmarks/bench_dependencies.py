"""The cost of finding what a field depends on, for the gradient routes that keep no graph.

``gradient="checkpoint"`` (and adjoint, reversible) look for every tensor requiring grad the field
holds (closure, defaults, globals, module state) before the solve, and probe it once
(``nodecourse.solvers._dependencies.find_dependencies``). Before that search the routes only probed
(one evaluation and a walk of its graph). This script times, one after the other in one process:

- ``probe only``: the earlier way (the probe call and the walk of its graph);
- ``search + probe``: today's :func:`~nodecourse.solvers._gradient_run.inspect_field`;
- ``solve``: the whole ``odeint(..., gradient="checkpoint")`` forward plus ``backward()``,

for the tanh MLP field of ``bench_dopri5.py`` (16 -> 64 -> 64 -> 16, float32, an ``nn.Module``)
and for a plain function closing over the same weights, on a short solve (batch 1, [0, 0.3], dopri5)
and a batch-512 solve ([0, 1]). Medians over the repeats, one torch thread.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_dependencies.py [--repeats 30]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import nodecourse
from nodecourse.solvers import _field_checks as field_checks
from nodecourse.solvers._gradient_run import _probe_call, inspect_field


def probe_only(func, y0, t0):
    """The earlier dependency step: one probing evaluation and the walk of its graph's leaves."""
    out, _ = field_checks.call_keeping_rng(lambda: _probe_call(func, t0, y0.detach().clone()), y0.device)
    leaves, seen, stack = [], set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if isinstance(getattr(node, "variable", None), torch.Tensor):
            leaves.append(node.variable)
        stack.extend(fn for fn, _ in node.next_functions)
    return leaves


def fields():
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 16)
    )

    class Module(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, t, y):
            return self.net(y)

    weights = [p for p in net.parameters()]

    def closure(t, y):  # the same MLP written as a function closing over its weights
        w1, b1, w2, b2, w3, b3 = weights
        return torch.tanh(torch.tanh(y @ w1.T + b1) @ w2.T + b2) @ w3.T + b3

    return {"module": Module(), "closure": closure}


def median_seconds(call, repeats: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = {"short (1, [0, 0.3])": (1, 0.3), "batch 512 ([0, 1])": (512, 1.0)}
    print(f"{'case':22s} {'field':8s} {'probe only':>12s} {'search+probe':>13s} {'added':>9s} {'solve+bwd':>11s} share")
    for label, (batch, end) in cases.items():
        y0 = torch.randn(batch, 16)
        t = torch.tensor([0.0, end])
        for name, func in fields().items():
            before = median_seconds(lambda: probe_only(func, y0, t[0]), args.repeats)
            now = median_seconds(lambda: inspect_field(func, y0, t[0]), args.repeats)

            def solve():
                y = y0.clone().requires_grad_(True)
                nodecourse.odeint(
                    func, y, t, method="dopri5", rtol=1e-5, atol=1e-6, gradient="checkpoint"
                ).ys.sum().backward()

            whole = median_seconds(solve, max(3, args.repeats // 5))
            added = now - before
            print(
                f"{label:22s} {name:8s} {before * 1e6:10.0f}us {now * 1e6:11.0f}us {added * 1e6:7.0f}us "
                f"{whole * 1e3:9.2f}ms {100 * added / whole:5.2f}%"
            )


if __name__ == "__main__":
    main()
