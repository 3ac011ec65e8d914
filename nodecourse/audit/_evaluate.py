"""Running a model on a set and seeing the work its cores do.

:class:`WorkMeter` watches every solve made while it is active: each ``odeint`` call (through
:class:`nodecourse.measure.SolverWorkLog`: NFE, steps, rejected steps, status) and
each DEQ forward (a forward hook reading ``DEQ.stats``: iterations, final residual, status, and
which samples converged). :func:`run` evaluates a set in chunks of rows without gradients and
:func:`per_input` one row at a time, so each input's own work is seen.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import torch

from nodecourse.audit import _inputs as I
from nodecourse.audit._discovery import Core
from nodecourse.measure import SolverWorkLog
from nodecourse.solvers import SolverError

WORK_KEYS = ("nfe", "n_steps", "n_accepted", "n_rejected", "solves", "iterations", "fixed_point_solves")


class WorkMeter:
    """Context manager: the work of every solve of ``cores`` made inside it.

    ``totals()``: ``nfe``, ``n_steps``, ``n_accepted``, ``n_rejected``, ``solves`` (ODE solves),
    ``iterations`` and ``fixed_point_solves`` (DEQ); ``failures``: a list of ``(what, status)`` of
    solves that did not succeed (ODE statuses, DEQ statuses), ``unconverged_rows``: DEQ samples that
    did not reach their tolerance; ``residuals``: each DEQ solve's final residual.
    """

    def __init__(self, cores: list[Core]):
        self.cores = cores
        self.log = SolverWorkLog()
        self.deq_calls: list[dict] = []
        self.observed: list = []  # SolveCalls of observed solves (nodecourse.audit._hook)
        self._hooks = []
        self._listening = None

    def _deq_hook(self, module, args, output):
        stats = dict(module.stats)
        result = module.forward_result
        stats["unconverged"] = int((~result.converged).sum()) if result is not None else 0
        self.deq_calls.append(stats)

    def __enter__(self) -> "WorkMeter":
        from nodecourse.audit._hook import active

        self.log.__enter__()
        for core in self.cores:
            if core.kind == "deq" and not getattr(core, "observed", False):
                self._hooks.append(core.module.register_forward_hook(self._deq_hook))
        hook = active()
        if hook is not None:
            self._listening = hook.listening(self.observed.append)
            self._listening.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks = []
        if self._listening is not None:
            self._listening.__exit__(None, None, None)
            self._listening = None
        self.log.__exit__(*exc)

    def _observed(self, kind: str) -> list:
        return [c for c in self.observed if (c.entry == "torchdeq DEQ") == (kind == "deq")]

    def totals(self) -> dict:
        t = self.log.totals()
        # nodecourse.odeint called directly is in the library's own log already
        ode = [c for c in self._observed("ode") if c.entry != "nodecourse.odeint"]
        deq = self._observed("deq")
        return {
            "nfe": t["nfe"] + sum(c.nfe or 0 for c in ode),
            "n_steps": t["n_steps"],
            "n_accepted": t["n_accepted"],
            "n_rejected": t["n_rejected"],
            "solves": t["solves"] + len(ode),
            "iterations": sum(int(c["forward_iters"]) for c in self.deq_calls) + sum(c.nfe or 0 for c in deq),
            "fixed_point_solves": len(self.deq_calls) + len(deq),
        }

    def by_solve(self) -> dict[str, dict]:
        """Observed solves' work by solve: ``{name: {"calls", "nfe", "state_max"}}`` (``name``: the
        solve's name, its call site numbered where a site holds several; ``state_max``: the largest
        ``|z|`` in any of the solve's outputs)."""
        out: dict[str, dict] = {}
        for c in self.observed:
            e = out.setdefault(c.name or c.site, {"calls": 0, "nfe": 0.0, "state_max": None})
            e["calls"] += 1
            e["nfe"] += c.nfe or 0.0
            if c.state_max is not None:
                e["state_max"] = max(e["state_max"] or 0.0, c.state_max)
        return out

    @property
    def failures(self) -> list[tuple[str, str]]:
        out = [("odeint", r.status) for r in self.log.failures]
        out += [("DEQ", c["forward_status"]) for c in self.deq_calls if c["forward_status"] != "success"]
        out += [(c.entry, c.status) for c in self.observed if c.status != "success" and c.entry != "nodecourse.odeint"]
        return out

    @property
    def unconverged_rows(self) -> int:
        return sum(c["unconverged"] for c in self.deq_calls) + sum(c.unconverged for c in self.observed)

    @property
    def residuals(self) -> list[float]:
        return [float(c["forward_residual"]) for c in self.deq_calls]


@dataclass
class Run:
    """One evaluation of a model on a set: ``outputs`` (float64, CPU; NaN rows where a solve raised),
    ``seconds`` (forward time), the work totals, and what failed."""

    outputs: torch.Tensor
    seconds: float
    work: dict
    failed_rows: int = 0  # rows whose solve raised, or whose DEQ solve did not converge
    errors: list[str] = field(default_factory=list)  # statuses of the solves that failed
    residuals: list[float] = field(default_factory=list)
    by_solve: dict = field(default_factory=dict)  # observed solves' work by call site

    @property
    def n_rows(self) -> int:
        return int(self.outputs.shape[0])


@torch.no_grad()
def run(model, cores: list[Core], x, *, chunk: int = 256) -> Run:
    """``model`` on every row of ``x`` in chunks of ``chunk`` rows (eval mode, no gradients).

    A chunk whose solve raises (a :class:`~nodecourse.SolverError`: max steps, non-finite values)
    gets NaN outputs and counts its rows as failed; the others still run.
    """
    n = I.n_rows(x)
    outs, errors, failed, seconds = [], [], 0, 0.0
    shape = None
    with WorkMeter(cores) as meter, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statuses are counted here, not printed once per chunk
        for start in range(0, n, chunk):
            rows = slice(start, min(n, start + chunk))
            t0 = time.perf_counter()
            try:
                out = I.call(model, I.take(x, rows))
                seconds += time.perf_counter() - t0
                out = out.detach().double().cpu()
                shape = out.shape[1:]
            except (SolverError, FloatingPointError, AssertionError, RuntimeError) as exc:
                # torchdiffeq stops with an AssertionError ("underflow in dt") or a RuntimeError
                seconds += time.perf_counter() - t0
                if not isinstance(exc, SolverError):  # a SolverError's solve is in the meter's log already
                    errors.append(type(exc).__name__)
                failed += rows.stop - rows.start
                out = None
            outs.append((rows, out))
    if shape is None:
        shape = ()
    full = torch.full((n, *shape), math.nan, dtype=torch.float64)
    for rows, out in outs:
        if out is not None:
            full[rows] = out.reshape(rows.stop - rows.start, *shape)
    errors += [status for _, status in meter.failures]
    return Run(
        full, seconds, meter.totals(), failed + meter.unconverged_rows, errors, meter.residuals, meter.by_solve()
    )


@torch.no_grad()
def per_input(model, cores: list[Core], x, rows: list[int], *, progress: bool = False, desc: str = "") -> list[dict]:
    """Each row of ``x`` in ``rows`` on its own: one dict per row with its work totals, ``ok``
    (every solve succeeded and converged), ``status`` (the first failure, or ``"success"``),
    ``residual`` (the DEQ's final residual, if any), ``seconds``, ``output`` (a float64 tensor) and
    ``by_solve`` (an observed solve's work on this row, by call site)."""
    from tqdm.auto import tqdm

    out = []
    # closed when the loop ends, even by an exception, so no bar outlives its step
    with tqdm(rows, desc=desc or "one input at a time", disable=not progress, leave=False) as bar:
        for i in bar:
            r = run(model, cores, I.take(x, slice(i, i + 1)), chunk=1)
            out.append(
                {
                    **r.work,
                    "ok": r.failed_rows == 0 and not r.errors,
                    "status": r.errors[0] if r.errors else "success",
                    "residual": max(r.residuals) if r.residuals else None,
                    "seconds": r.seconds,
                    "output": r.outputs[0],
                    "by_solve": {site: w["nfe"] for site, w in r.by_solve.items()},
                }
            )
    return out


def work_unit(cores: list[Core]) -> tuple[str, str]:
    """``(key, name)`` of the work that measures the primary core: NFE or iterations (a torchdeq
    DEQ's: the mean over the batch's samples, per solve)."""
    return ("iterations", "iterations") if cores[0].kind == "deq" else ("nfe", "NFE")
