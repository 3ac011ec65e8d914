"""Measure the course's device paths on CPU and on CUDA, side by side; write a Markdown report.

    python scripts/gpu_check.py --out gpu-check/            # on a machine with a CUDA GPU

For each explorer (solver, adjoint, DEQ) and a few settings it runs the same computation with
``device="cpu"`` and ``device="cuda"`` and reports the solver work (NFE, steps, iterations: these
must agree up to float rounding) and the wall time (CUDA timings synchronise: each compute function
copies its result to the host). It also runs ``nodecourse physionet --device cuda`` and
``--device cpu`` for each model (quick mode) and records the AUC and the time. Exits 1 when CUDA
is not available.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import time
from pathlib import Path


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def solver_rows(devices):
    from nodecourse.widgets import PROBLEMS, run_solver

    rows = []
    cases = [("van der pol (μ=2)", m, 1e-6) for m in ("dopri5", "bosh3", "rk4")]
    cases += [("stiff: y' = -1000 (y - cos t)", m, 1e-6) for m in ("implicit_euler", "trapezoid")]
    for problem, method, rtol in cases:
        for dev in devices:
            try:
                run_solver(PROBLEMS[problem], method, rtol, rtol * 1e-2, 0.01, dev)  # warm-up
                r = run_solver(PROBLEMS[problem], method, rtol, rtol * 1e-2, 0.01, dev)
                rows.append(
                    [
                        problem,
                        method,
                        dev,
                        r.status,
                        r.nfe,
                        r.n_accepted,
                        r.n_rejected,
                        f"{r.max_error:.2e}",
                        f"{1e3 * r.seconds:.1f}",
                    ]
                )
            except Exception as exc:  # noqa: BLE001 - the report names what failed
                rows.append([problem, method, dev, f"ERROR {type(exc).__name__}: {exc}"[:120], "", "", "", "", ""])
    return ["problem", "method", "device", "status", "NFE", "accepted", "rejected", "max error", "ms"], rows


def adjoint_rows(devices):
    from nodecourse.widgets._adjoint_explorer import MODES, run_gradient

    rows = []
    for mode in MODES:
        for dev in devices:
            try:
                start = time.perf_counter()
                r = run_gradient(-10.0, 2.0, 1e-6, mode, dev)
                rows.append(
                    [
                        mode,
                        dev,
                        r.status,
                        f"{r.rel_error:.2e}",
                        r.nfe,
                        r.nfe_backward,
                        "n/a" if r.peak_bytes is None else f"{r.peak_bytes / 2**20:.2f}",
                        f"{time.perf_counter() - start:.2f}",
                    ]
                )
            except Exception as exc:  # noqa: BLE001
                rows.append([mode, dev, f"ERROR {type(exc).__name__}: {exc}"[:120], "", "", "", "", ""])
    return ["gradient", "device", "status", "rel. error", "NFE fwd", "NFE bwd", "peak MiB", "s (incl. all modes)"], rows


def deq_rows(devices):
    from nodecourse.deq import METHODS
    from nodecourse.widgets._deq_explorer import run_deq

    rows = []
    for solver in sorted(METHODS):
        for dev in devices:
            try:
                run_deq(solver, 1e-6, 0.0, dev)  # warm-up (and training, once)
                r = run_deq(solver, 1e-6, 0.0, dev)
                rows.append([solver, dev, r.status, r.n_iter, f"{r.final_residual:.1e}", f"{1e3 * r.seconds:.1f}"])
            except Exception as exc:  # noqa: BLE001
                rows.append([solver, dev, f"ERROR {type(exc).__name__}: {exc}"[:120], "", "", ""])
    return ["solver", "device", "status", "iterations", "final rel. residual", "ms"], rows


def physionet_rows(devices, patients: int, epochs: int):
    rows = []
    for model in ("odernn", "latent-ode", "gru-dt", "gru-d", "summary-logreg"):
        for dev in devices:
            cmd = [
                sys.executable,
                "-m",
                "nodecourse.course.cli",
                "physionet",
                "--model",
                model,
                "--device",
                dev,
                "--quick",
                "--patients",
                str(patients),
                "--epochs",
                str(epochs),
                "--json",
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                rows.append([model, dev, f"ERROR rc={proc.returncode}: {proc.stderr.strip()[-200:]}", "", "", ""])
                continue
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            nfe = (out.get("solver") or {}).get("train_nfe", "")
            rows.append([model, dev, out["auc"], out["n_train"], nfe, out["seconds"]])
    return ["model", "device", "AUC", "n train", "train NFE", "s"], rows


def main(argv=None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="gpu-check", help="folder for report.md and report.json")
    parser.add_argument("--patients", type=int, default=600)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: torch.cuda.is_available() is False; run this on a CUDA machine", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    devices = ["cpu", "cuda"]
    header = (
        f"Measured {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC on {torch.cuda.get_device_name(0)} "
        f"(host {platform.processor() or platform.machine()}, {torch.get_num_threads()} CPU threads), "
        f"torch {torch.__version__}, CUDA {torch.version.cuda}."
    )
    sections = {
        "Solver explorer (lesson 2)": solver_rows(devices),
        "Adjoint explorer (lesson 4), lam=-10, T=2, tol=1e-6": adjoint_rows(devices),
        "DEQ explorer (lesson 6), tol=1e-6": deq_rows(devices),
        f"nodecourse physionet, {args.patients} patients, {args.epochs} epochs": physionet_rows(
            devices, args.patients, args.epochs
        ),
    }
    lines = ["# Device check: CPU and CUDA side by side", "", header, ""]
    for title, (head, rows) in sections.items():
        lines += [f"## {title}", "", _row(head), _row(["---"] * len(head)), *(_row(r) for r in rows), ""]
    (out / "report.md").write_text("\n".join(lines))
    (out / "report.json").write_text(
        json.dumps(
            {"header": header, **{k: {"columns": h, "rows": r} for k, (h, r) in sections.items()}},
            indent=1,
            default=str,
        )
    )
    print("\n".join(lines))
    failed = any("ERROR" in str(c) for _, rows in sections.values() for r in rows for c in r)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
