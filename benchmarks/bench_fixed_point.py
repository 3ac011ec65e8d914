"""Fixed-point solvers: evaluations of f to a relative residual of 1e-8, nodecourse vs torchdeq.

Problems (float64, batch 4, seeded, nodecourse.deq.contraction): f(z) = A z + b and
f(z) = tanh(A z + b), A symmetric with eigenvalues spread over [-rho, rho] (spectral radius
rho), for rho in 0.9, 0.95, 0.99. Every solver starts at z = 0 and stops when the worst
sample's ||f(z) - z|| / ||f(z)|| <= tol; f calls are counted the same way for both libraries.
torchdeq runs with its defaults (Anderson m=6, lam=1e-4; Broyden with full memory) and,
as a second Anderson row, with lam=1e-10 (closer to our relative regularisation).

    OMP_NUM_THREADS=1 python benchmarks/bench_fixed_point.py [--dim 50] [--tol 1e-8]
"""

from __future__ import annotations

import argparse
import time

import torch

from nodecourse.deq import contraction
from nodecourse.deq._compare import run_nodecourse, run_torchdeq, torchdeq_available

RHOS = (0.9, 0.95, 0.99)
KINDS = ("linear", "tanh")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=50)
    parser.add_argument("--tol", type=float, default=1e-8)
    parser.add_argument("--max-iter", type=int, default=10_000)
    args = parser.parse_args()
    have_ref = torchdeq_available()
    if not have_ref:
        print("torchdeq does not import here: only nodecourse's solvers are compared")
    cols = ["nodecourse picard", "nodecourse anderson", "nodecourse broyden"]
    if have_ref:
        cols += ["torchdeq picard", "torchdeq anderson", "torchdeq anderson lam=1e-10", "torchdeq broyden"]
    print(
        f"evaluations of f to relative residual {args.tol:g} (dim {args.dim}, batch 4, float64, "
        f"torch {torch.__version__}); '>N' = not reached in N\n"
    )
    print("| problem | " + " | ".join(cols) + " | anderson / picard |")
    print("|---|" + "---|" * (len(cols) + 1))
    start = time.perf_counter()
    for kind in KINDS:
        for rho in RHOS:
            p = contraction(kind, rho, dim=args.dim)
            kw = dict(tol=args.tol, max_iter=args.max_iter)
            runs = [run_nodecourse(p, m, **kw) for m in ("picard", "anderson", "broyden")]
            if have_ref:
                runs += [
                    run_torchdeq(p, "picard", **kw),
                    run_torchdeq(p, "anderson", **kw),
                    run_torchdeq(p, "anderson", lam=1e-10, **kw),
                    run_torchdeq(p, "broyden", **kw),
                ]
            cells = [str(r.n_evals) if r.reached else f">{r.n_evals}" for r in runs]
            ratio = runs[1].n_evals / runs[0].n_evals
            print(f"| {kind}, rho={rho:g} | " + " | ".join(cells) + f" | {ratio:.2f} |")
    print(f"\n({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
