"""Calibrating the checks: the solution over many seeds, and a catalogue of wrong answers.

A check is calibrated when, drawn the way the grader draws (each seed's inputs,
the learner's part, the reference, the judge, all in process), the solution
passes it on every seed of a fixed list, and every wrong answer that its
"likely cause" messages name fails it on every seed. ``tests/test_grading_calibration.py``
runs both in the slow tier; ``python -m nodecourse.course.tasks.calibration``
prints the table (check, seeds, failures) for the record.

A wrong answer is the solution's answer cell with a few text replacements
(:class:`WrongAnswer`), so each one is a mistake a learner can make in that
cell, and the catalogue stays in step with the solutions.
"""

from __future__ import annotations

import copy
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from nodecourse.course import tasks
from nodecourse.course.tasks import plain
from nodecourse.course.tasks.spec import Verdict, independent_copy, make_inputs, paired_inputs

# Wrong answers run on this many seeds of the check's list (fewer where a seed costs seconds).
WRONG_SEEDS = 200


@dataclass(frozen=True)
class WrongAnswer:
    """A named mistake: ``replace`` applied to answer cell ``task`` of exercise ``exercise``'s solution;
    check ``check`` must fail with ``cause`` in its message."""

    exercise: str
    check: str
    task: str
    replace: tuple[tuple[str, str], ...]
    cause: str

    @property
    def id(self) -> str:
        return f"{self.exercise}-{self.check}-{self.cause[:28]}"


def _w(exercise, check, task, replace, cause) -> WrongAnswer:
    pairs = (replace,) if isinstance(replace[0], str) else tuple(replace)
    return WrongAnswer(exercise, check, task, pairs, cause)


_EULER = "return y + h * f(t, y)"
_BLOCK = "return euler_step(self.field, 0.0, z, 1.0)"
_RK4 = "return y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)"
_DD = "return (up - down) / (2 * h)"
_TIGHT_FD = "model.block.solver = deployed.replace(rtol=1e-10, atol=1e-10)"
_KIN = "f.pow(2).sum(dim=1, keepdim=True)"
_BREAK = ("        if accuracy_at(model, x, y, tol)[0] < best - 0.05:\n            return tol\n",)
_SEMI = "head = x[:2 * n]"
_NOISE = "g(tt, y) * dw"
_COARSE = "coarse = dw.reshape(n // k, k, paths, 1).sum(1)"
_ABS = "(y - exact).abs().mean()"
_CONTRACT = "return (fz @ dxdt.unsqueeze(-1)).squeeze(-1)"
_FIRST = "first = float(s[moved][0]) if bool(moved.any()) else None"

CATALOGUE: tuple[WrongAnswer, ...] = (
    _w("01", "euler-step", "euler-step", (_EULER, "return y - h * f(t, y)"), "the wrong sign"),
    _w("01", "euler-step", "euler-step", (_EULER, "return h * f(t, y)"), "y is not added"),
    _w("01", "euler-step", "euler-step", (_EULER, "return y + f(t, y)"), "the step size h is missing"),
    _w("01", "euler-step", "euler-step", (_EULER, "return y"), "no step taken"),
    _w("01", "euler-step", "euler-step", (_EULER, "return f(t, y)"), "not the new state"),
    _w("01", "residual-block", "residual-block", (_BLOCK, "return self.field(0.0, z)"), "without adding z"),
    _w("01", "residual-block", "residual-block", (_BLOCK, "return z"), "returns z unchanged"),
    _w(
        "01",
        "residual-block",
        "residual-block",
        (_BLOCK, "return z + self.field(0.0, z)"),
        "instead of calling euler_step",
    ),
    _w("01", "residual-block", "residual-block", (_BLOCK, _BLOCK + ".detach()"), "not connected to z"),
    _w(
        "01", "euler-integrate-matches", "euler-integrate", ("range(n_steps)", "range(n_steps - 1)"), "one step too few"
    ),
    _w(
        "01",
        "euler-integrate-matches",
        "euler-integrate",
        ("range(n_steps)", "range(n_steps + 1)"),
        "one step too many",
    ),
    _w("01", "euler-integrate-matches", "euler-integrate", ("t = t + h", "t = t"), "the time is not advanced"),
    _w("02", "rk4-step-matches", "rk4-step", (_RK4, "return y + h * k1"), "an Euler step"),
    _w("02", "rk4-step-matches", "rk4-step", (_RK4, "return y + h * k2"), "a midpoint step"),
    _w("02", "rk4-order", "rk4-step", (_RK4, "return y + h * k2"), "a lower-order step"),
    _w(
        "02",
        "error-norm",
        "error-norm",
        (".square().mean().sqrt().item()", ".abs().max().item()"),
        "the largest component",
    ),
    _w(
        "03",
        "classifier",
        "classifier",
        (
            '        self.block = AugmentedBlock(MLPField(2 + augment_dim, hidden=(32, 32), activation="relu"), '
            "augment_dim)\n        self.readout = nn.Linear(2 + augment_dim, 1)\n",
            "        self.readout = nn.Linear(2 + augment_dim, 1)\n        self.block = AugmentedBlock(MLPField(2 + "
            'augment_dim, hidden=(32, 32), activation="relu"), augment_dim)\n',
        ),
        "built in another order",
    ),
    _w("03", "augmented-fits-the-ring", "train", ("opt.step()", "pass"), "the optimiser step or zero_grad"),
    _w("04", "adjoint-dynamics", "adjoint-dynamics", ("da = -vjps[0]", "da = vjps[0]"), "the sign"),
    _w("04", "adjoint-dynamics", "adjoint-dynamics", ("da = -vjps[0]", "da = -2 * vjps[0]"), "counted twice"),
    _w(
        "04",
        "adjoint-dynamics",
        "adjoint-dynamics",
        ("with torch.enable_grad():", "if True:"),
        "no torch.enable_grad()",
    ),
    _w("04", "learner-adjoint", "learner-adjoint", ("s0[n:2 * n].view_as(z1)", "-s0[n:2 * n].view_as(z1)"), "the sign"),
    _w(
        "05",
        "masked-update-matches",
        "masked-update",
        ("return observed * h_new + (1 - observed) * h", "return h_new"),
        "must keep h exactly",
    ),
    _w(
        "05",
        "masked-update-no-leak",
        "masked-update",
        ("torch.cat([x * m, m]", "torch.cat([x, m]"),
        "multiply the values by the mask",
    ),
    _w(
        "05",
        "odernn-encode-batch-invariant",
        "masked-update",
        ("return observed * h_new + (1 - observed) * h", "return h_new"),
        "updated anyway",
    ),
    _w("06", "mixing-weights", "mixing-weights", ("lam * s *", "lam *"), "not scaled by s"),
    _w(
        "06",
        "implicit-hook",
        "implicit-hook",
        ("    return hook\n", "    return lambda grad: grad\n"),
        "returns the incoming gradient unchanged",
    ),
    _w("06", "hutchinson", "hutchinson", ("create_graph=True", "create_graph=False"), "create_graph=True is missing"),
    _w(
        "06",
        "hutchinson",
        "hutchinson",
        ("return total / n_samples", "return total / n_samples ** 0.5"),
        "averaged over the samples",
    ),
    _w(
        "08",
        "exact-divergence",
        "exact-divergence",
        ("total = total + g[:, i]", "total = total + g[:, 0]"),
        "entry i of the gradient",
    ),
    _w("08", "hutchinson", "hutchinson", ("return total / probes.shape[0]", "return total"), "the mean over probes"),
    _w("08", "hutchinson", "hutchinson", ("create_graph=True", "create_graph=False"), "create_graph=True is missing"),
    _w("08", "dynamics", "dynamics", ("-div.unsqueeze(1)", "div.unsqueeze(1)"), "the sign"),
    _w("08", "dynamics", "dynamics", ("with torch.enable_grad():", "if True:"), "no torch.enable_grad()"),
    _w("08", "log-prob", "log-prob", ("- end[:, -1]", "+ end[:, -1]"), "the sign of Δlog p"),
    _w(
        "09",
        "accuracy-at",
        "accuracy-at",
        ("model.block.solve(x, rtol=tol, atol=tol)", "model.block.solve(x)"),
        "the model's own tolerance",
    ),
    _w("09", "accuracy-at", "accuracy-at", (".double().mean())", ".double().sum())"), "the number of correct rows"),
    _w(
        "09",
        "accuracy-at",
        "accuracy-at",
        ("(logits.argmax(dim=1) == y)", "(logits.argmax(dim=1) != y)"),
        "the error rate",
    ),
    _w(
        "09",
        "accuracy-at",
        "accuracy-at",
        (
            "sol = model.block.solve(x, rtol=tol, atol=tol)",
            "model.block.solver = model.block.solver.replace(rtol=tol, atol=tol)\n        sol = model.block.solve(x)",
        ),
        "not put back",
    ),
    _w(
        "09",
        "breaking-tolerance",
        "breaking-tolerance",
        (
            _BREAK[0],
            "        acc = accuracy_at(model, x, y, tol)[0]\n        if acc < best - 0.05:\n"
            "            return tol\n        best = acc\n",
        ),
        "compared with the previous one",
    ),
    _w(
        "09",
        "breaking-tolerance",
        "breaking-tolerance",
        (
            _BREAK[0],
            "        if accuracy_at(model, x, y, tol)[0] < best - 0.05:\n"
            "            return tols[tols.index(tol) - 1]\n",
        ),
        "the last good one",
    ),
    _w("09", "breaking-tolerance", "breaking-tolerance", ("best - 0.05", "best - 0.5"), "is not reached"),
    _w(
        "09",
        "directional-derivative",
        "directional-derivative",
        (_DD, "return (down - up) / (2 * h)"),
        "the wrong way round",
    ),
    _w("09", "directional-derivative", "directional-derivative", (_DD, "return (up - down) / h"), "not by 2h"),
    _w(
        "09", "directional-derivative", "directional-derivative", (_DD, "return (up - down) / (4 * h)"), "divided by 4h"
    ),
    _w(
        "09",
        "directional-derivative",
        "directional-derivative",
        (("p.copy_(s - h * v)", "p.copy_(s)"), (_DD, "return (up - down) / h")),
        "a one-sided difference",
    ),
    _w(
        "09",
        "directional-derivative",
        "directional-derivative",
        ("            for p, s in zip(params, saved):\n                p.copy_(s)\n", "            pass\n"),
        "not restored",
    ),
    _w(
        "09", "route-error", "route-error", ("deployed.replace(gradient=route)", "deployed"), "the route is not applied"
    ),
    _w(
        "09",
        "route-error",
        "route-error",
        ("/ math.sqrt(sum(f * f for f in fd))", "/ math.sqrt(sum(a * a for a in ad))"),
        "the norm of the route's derivatives",
    ),
    _w(
        "09",
        "route-error",
        "route-error",
        (_TIGHT_FD, "model.block.solver = deployed"),
        "the model's own (loose) tolerance",
    ),
    _w(
        "09",
        "route-error",
        "route-error",
        ("    finally:\n        model.block.solver = deployed", "    finally:\n        pass"),
        "not put back",
    ),
    _w("09", "wrong-route", "wrong-route", ("> 1e-2", "< 1e-2"), "the first route is returned"),
    _w(
        "09",
        "wrong-route",
        "wrong-route",
        ("            return route", "            return None"),
        "the wrong way round",
    ),
    _w("10", "kinetic-dynamics", "kinetic-dynamics", (_KIN, "f.norm(dim=1, keepdim=True)"), "the norm, not its square"),
    _w(
        "10",
        "kinetic-dynamics",
        "kinetic-dynamics",
        (_KIN, "f.pow(2).mean(dim=1, keepdim=True)"),
        "the mean of the squares",
    ),
    _w("10", "kinetic-dynamics", "kinetic-dynamics", (_KIN, _KIN + " + state[:, -1:]"), "E is added"),
    _w(
        "10",
        "kinetic-dynamics",
        "kinetic-dynamics",
        ("return torch.cat([f, " + _KIN + "], dim=1)", "return f"),
        "the E column is missing",
    ),
    _w(
        "10",
        "kinetic-dynamics",
        "kinetic-dynamics",
        ("f = field(t, z)", "f = field(t, z).detach()"),
        "a .detach() or torch.no_grad()",
    ),
    _w("10", "heun-step", "heun-step", ("func(torch.tensor(t + h,", "func(torch.tensor(t,"), "evaluated at t, not"),
    _w("10", "heun-step", "heun-step", ("y1 = y + 0.5 * h * (f + f1)", "y1 = y + h * f"), "an Euler step"),
    _w("10", "heun-step", "heun-step", ("y1 = y + 0.5 * h * (f + f1)", "y1 = y + h * f1"), "y + h f1"),
    _w(
        "10",
        "heun-inverse",
        "heun-inverse",
        ("func(torch.tensor(t1 - h,", "func(torch.tensor(t1,"),
        "evaluated at t1, not",
    ),
    _w(
        "10",
        "heun-inverse",
        "heun-inverse",
        ("zh = 2 * y1 - zh1 - h * f1", "zh = 2 * y1 - zh1 + h * f1"),
        "+ h f1 where",
    ),
    _w("10", "heun-inverse", "heun-inverse", ("y = y1 - 0.5 * h * (f + f1)", "y = y1 - h * f1"), "y1 - h f1"),
    _w("10", "seminorm-values", "seminorm", (_SEMI, "head = x"), "over every entry"),
    _w("10", "seminorm-values", "seminorm", (" / math.sqrt(head.numel())", ""), "the 2-norm"),
    _w("10", "seminorm-values", "seminorm", (_SEMI, "head = x[:n]"), "the first n entries only"),
    _w("10", "seminorm-values", "seminorm", (_SEMI, "head = x[2 * n:]"), "the last entries"),
    _w("10", "seminorm-adjoint", "seminorm", (_SEMI, "head = x"), "still covers the parameter entries"),
    _w("11", "em-step", "em-step", (_NOISE, _NOISE + " * math.sqrt(h)"), "scales the noise twice"),
    _w("11", "em-step", "em-step", (_NOISE, "g(tt, y) * h"), "the noise term uses h"),
    _w("11", "em-step", "em-step", ("f(tt, y) * h", "f(tt, y)"), "the drift is not multiplied by h"),
    _w("11", "em-step", "em-step", ("torch.tensor(t,", "torch.tensor(t + h,"), "at the start of the step"),
    _w("11", "em-order", "strong-order", ("(mu - 0.5 * sigma**2) * T", "mu * T"), "without the Ito correction"),
    _w("11", "em-order", "strong-order", (_COARSE, "coarse = dw[::k]"), "every k-th fine increment"),
    _w("11", "em-order", "strong-order", (_ABS, "(y - exact).pow(2).mean().sqrt()"), "the root-mean-square error"),
    _w("11", "em-order", "strong-order", (_ABS, "(y - exact).abs().max()"), "the largest error"),
    _w("11", "em-order", "strong-order", ("hs.append(h)", "hs.append(n // k)"), "the number of steps"),
    _w("11", "cde-contract", "cde-contract", (".squeeze(-1)", ".squeeze()"), ".squeeze() removed"),
    _w("11", "cde-contract", "cde-contract", ("(fz @", "(fz.transpose(-1, -2) @"), "contracted over the wrong axis"),
    _w(
        "11",
        "cde-contract",
        "cde-contract",
        (_CONTRACT, "return (fz * dxdt.unsqueeze(1)).sum(1)"),
        "the sum runs over channels",
    ),
    _w("11", "cde-contract", "cde-contract", (_CONTRACT, _CONTRACT + ".detach()"), "carries no graph"),
    _w("11", "path-change", "path-change", ("x_new = x.clone()", "x_new = x"), "changed in place"),
    _w("11", "path-change", "path-change", ("kind=kind", 'kind="hermite"'), "the other kind"),
    _w(
        "11",
        "path-change",
        "path-change",
        ("change = new.evaluate(s) - old.evaluate(s)", "change = old.evaluate(s) - new.evaluate(s)"),
        "the old path minus the new one",
    ),
    _w("11", "missing-lookahead", "path-change", (_FIRST, "first = float(s[s > t[k - 1]][0])"), "read off the knots"),
)


def solution_path(exercise: str, root: Path | None = None) -> Path:
    """``solutions/<exercise>_*.ipynb`` of the course at ``root`` (default: the course this package is in)."""
    from nodecourse.course.paths import find_course_root

    root = root or find_course_root()
    matches = sorted((root / "solutions").glob(f"{exercise}_*.ipynb")) if root else []
    if len(matches) != 1:
        raise FileNotFoundError(f"exercise {exercise!r}: expected one solutions/{exercise}_*.ipynb under {root}")
    return matches[0]


def namespace(
    exercise: str, wrong: WrongAnswer | None = None, *, built: bool = False, root: Path | None = None
) -> dict:
    """The namespace the solution's code cells (not its check cells) make, run here; with ``wrong``'s
    replacements in its answer cell, or with every answer a stub (``built``: the unsolved exercise)."""
    import nbformat
    import torch

    from nodecourse.course.exercise_builder import answer_id, build_exercise, check_id

    nb = nbformat.read(solution_path(exercise, root), as_version=4)
    if built:
        nb = build_exercise(nb)
    dtype = torch.get_default_dtype()
    ns: dict = {}
    try:
        for cell in nb.cells:
            if cell.cell_type != "code" or check_id(cell):
                continue
            source = cell.source
            if wrong is not None and answer_id(cell) == wrong.task:
                for old, new in wrong.replace:
                    if old not in source:
                        raise ValueError(f"wrong answer {wrong.id}: {old!r} is not in answer cell {wrong.task!r}")
                    source = source.replace(old, new)
            exec(compile(source, f"<{exercise} cell {cell.get('id')}>", "exec"), ns)
    finally:
        torch.set_default_dtype(dtype)  # a setup cell may change it; the grader's kernel is its own process
    return ns


# The references of the seeds wrong answers also run on, kept as the grader receives them (JSON text):
# a check's solution and each of its wrong answers are judged against the same reference per seed.
# Beside each, an untouched copy of the seed's inputs, where one can be copied (spec.independent_copy):
# a draw may run dozens of solves to be decidable (ex 09's, 0.4-0.7 s a seed).
_REFERENCES: dict[tuple[str, str, int], tuple[str, dict | None]] = {}


def verdict(exercise: str, check: str, seed: int, ns: dict, *, scan: bool = True) -> Verdict:
    """One check on one seed, split as the grader splits it: the learner's part, the reference, the judge.
    ``scan=False``: the library's answers are disabled through their attributes only
    (:func:`nodecourse.course.tasks.kernel_side.disabled`), for the seeds after the first.

    The reference is computed first, on its own copy of the seed's inputs, so nothing the learner's
    code does to its inputs reaches it; the references of the first :data:`WRONG_SEEDS` seeds are kept
    for the rest of the process, each with an untouched copy of its inputs."""
    task = tasks.get_task(exercise, check)
    key = (exercise, check, seed)
    if key in _REFERENCES:
        text, kept = _REFERENCES[key]
        inputs = copy.deepcopy(kept) if kept is not None else make_inputs(task, seed)
    else:
        inputs, theirs = paired_inputs(task, seed)
        kept = independent_copy(inputs) if seed < WRONG_SEEDS else None  # before the answer sees them
        text = plain.dumps(tasks.reference_value(task, theirs))
        if seed < WRONG_SEEDS:
            _REFERENCES[key] = (text, kept)
    answer = tasks.answer_text(exercise, check, seed, ns, scan=scan, inputs=inputs)
    return tasks.judge_texts(task, answer, plain.decode(text))


def failures(exercise: str, check: str, seeds: Iterable[int], ns: dict) -> list[tuple[int, str]]:
    """``(seed, message)`` for each seed on which the answers in ``ns`` fail the check. The first seed
    searches every live object for the library's answers, as the grader does; the others reuse the
    attributes (the same namespace, so the same functions)."""
    out = []
    for i, seed in enumerate(seeds):
        v = verdict(exercise, check, seed, ns, scan=i == 0)
        if not v.passed:
            out.append((seed, v.detail))
    return out


def seeds_for(exercise: str, check: str) -> range:
    """The fixed seeds a check is calibrated on (``Task.calibration`` of them, from 0)."""
    return range(tasks.get_task(exercise, check).calibration)


def wrong_seeds_for(wrong: WrongAnswer) -> range:
    """The fixed seeds a wrong answer must fail on: the first :data:`WRONG_SEEDS` of its check's."""
    return range(min(WRONG_SEEDS, tasks.get_task(wrong.exercise, wrong.check).calibration))


def main(argv: list[str]) -> int:
    """Print the calibration table: ``python -m nodecourse.course.tasks.calibration [NN ...]``."""
    exercises = argv or list(tasks.CONVERTED)
    print("| check | seeds | solution fails | seconds |")
    print("|---|---|---|---|")
    for exercise in exercises:
        ns = namespace(exercise)
        for check in tasks.tasks_for(exercise):
            start = time.perf_counter()
            seeds = seeds_for(exercise, check)
            failed = failures(exercise, check, seeds, ns)
            first = f" (first: seed {failed[0][0]}: {failed[0][1][:100]})" if failed else ""
            print(
                f"| {exercise} {check} | {len(seeds)} | {len(failed)}{first} | {time.perf_counter() - start:.0f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
