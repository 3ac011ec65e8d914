"""The static reading of answer cells (:mod:`nodecourse.course.answer_reading`), both ways.

Every route around "write it yourself" found so far is refused (a reference to what the task's
declared reach forbids) or flagged for review (what the reader cannot decide), with its line; the
solutions' answers and ordinary, idiomatic answers (``model.eval()``, ``.modules()``,
``torch.no_grad()``, ``torch.compile``, plotting, strings and comments about "eval mode") are not.
Each answer is read with its exercise's declared reach and the exercise's own imports, as the
grader reads it.
"""

from __future__ import annotations

import functools
from pathlib import Path

import nbformat
import pytest

from nodecourse.course import answer_reading
from nodecourse.course.answer_reading import REFUSED, REVIEW
from nodecourse.course.exercise_builder import answer_id
from nodecourse.course.tasks import reach

REPO = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=None)
def _notebook(folder: str, exercise: str):
    (path,) = sorted((REPO / folder).glob(f"{exercise}_*.ipynb"))
    return nbformat.read(path, as_version=4)


@functools.lru_cache(maxsize=None)
def _setup(exercise: str) -> tuple[str, ...]:
    nb = _notebook("exercises", exercise)
    return tuple(c.source for c in nb.cells if c.cell_type == "code" and answer_id(c) is None)


def _solution_answers(exercise: str) -> dict[str, str]:
    nb = _notebook("solutions", exercise)
    return {answer_id(c): c.source for c in nb.cells if c.cell_type == "code" and answer_id(c)}


def read(exercise: str, answer: str, source: str, **others: str) -> list:
    """The findings of ``answer`` when the notebook's answers are the solution's, with ``answer``
    (and any of ``others``, answer id with ``_`` for ``-``) replaced."""
    answers = _solution_answers(exercise)
    answers[answer] = source
    answers.update({k.replace("_", "-"): v for k, v in others.items()})
    return answer_reading.read_answers(answers, exercise, _setup(exercise))[answer]


def kinds(findings) -> set[str]:
    return {f.kind for f in findings}


# --- the bypasses: each refused or flagged -------------------------------------------------------

HEUN_PARTIAL = """import functools
import nodecourse.solvers._reversible as R
R.heun_step = functools.partial(R.heun_step)
def reversible_heun_step(func, t, h, y, zh, f):
    return R.heun_step(func, t, h, y, zh, f)
"""

HEUN_CLOSURE = """from nodecourse.solvers import _reversible as reversible
def _wrap(fn):
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)
    return inner
reversible.heun_step = _wrap(reversible.heun_step)
def reversible_heun_step(func, t, h, y, zh, f):
    return reversible.heun_step(func, t, h, y, zh, f)
"""

HEUN_SAVED_CODE = """import nodecourse.solvers._reversible as R
_saved = R.heun_step.__code__
def reversible_heun_step(func, t, h, y, zh, f):
    fn = getattr(R, "heun" + "_step")
    fn.__code__ = _saved
    return fn(func, t, h, y, zh, f)
"""

# The module itself found by a name built from pieces: nothing names the library as written.
HEUN_HIDDEN_MODULE = """import importlib
_mod = importlib.import_module("nodecourse.solvers._" + "rever" + "sible")
_saved = getattr(_mod, "heun_" + "step").__code__
def reversible_heun_step(func, t, h, y, zh, f):
    fn = getattr(_mod, "heun_" + "step")
    fn.__code__ = _saved
    return fn(func, t, h, y, zh, f)
"""

ANDERSON_FIXED_POINT = """def anderson(f, z0, m=6, tol=1e-8, max_iter=1000):
    result = fixed_point(f, z0, method="anderson", tol=tol, max_iter=max_iter)
    return result.z, result.n_iter
"""

# The same through a helper the implicit-hook answer defines (answers share one namespace).
HOOK_WITH_HELPER = """def _solve(f, z0, tol):
    return fixed_point(f, z0, method="anderson", tol=tol, max_iter=3000)

def make_implicit_hook(f_z, z, tol=1e-12):
    def hook(grad):
        return _solve(lambda y: torch.autograd.grad(f_z, z, y, retain_graph=True)[0] + grad, grad, tol).z
    return hook
"""
ANDERSON_THROUGH_HELPER = """def anderson(f, z0, m=6, tol=1e-8, max_iter=1000):
    result = _solve(f, z0, tol)
    return result.z, result.n_iter
"""

ANDERSON_SAVED_CODE = """_code = fixed_point.__code__
def anderson(f, z0, m=6, tol=1e-8, max_iter=1000):
    g = globals()["fixed" + "_point"]
    g.__code__ = _code
    r = g(f, z0, method="anderson", tol=tol, max_iter=max_iter)
    return r.z, r.n_iter
"""

EULER_TORCHDIFFEQ = """import torch
from torchdiffeq import odeint as solve
def euler_step(f, t, y, h):
    ts = torch.tensor([t, t + h], dtype=y.dtype)
    return solve(f, y, ts, method="euler")[-1]
"""

EULER_TORCHDIFFEQ_MODULE = """import torchdiffeq
def euler_integrate(f, y0, t0, t1, n_steps):
    ts = torch.tensor([t0, t1], dtype=y0.dtype)
    return torchdiffeq.odeint(f, y0, ts, method="euler", options={"step_size": (t1 - t0) / n_steps})[-1]
"""

RK4_LIBRARY = """def rk4_step(f, t, y, h):
    return odeint(f, y, torch.tensor([t, t + h], dtype=y.dtype), method="rk4", step_size=h).ys[-1]
"""

ERROR_NORM_LIBRARY = """from nodecourse.solvers._control import error_scale, rms
def error_norm(err, y0, y1, rtol, atol):
    return float(rms(err / error_scale(y0, y1, rtol, atol)))
"""

WEIGHTS_LIBRARY = """def mixing_weights(G, lam=1e-10):
    valid = torch.ones(1, G.shape[0], dtype=torch.bool)
    return library_weights(G[None], valid, lam)[0]
"""

WEIGHTS_DEQ_MODULE = """from nodecourse.deq import _anderson as _a
def mixing_weights(G, lam=1e-10):
    return _a.anderson_weights(G[None], torch.ones(1, len(G), dtype=torch.bool), lam)[0]
"""

DIVERGENCE_LIBRARY = """from nodecourse.models import divergence_exact
def exact_divergence(f_out, z):
    return divergence_exact(f_out, z)
"""

HUTCHINSON_LIBRARY = """from nodecourse.models import divergence_hutchinson
def hutchinson_divergence(f_out, z, probes):
    return divergence_hutchinson(f_out, z, probes)
"""

DEQ_HUTCHINSON_LIBRARY = """from nodecourse.deq._regularizer import jacobian_regularizer
def hutchinson(f_out, z, n_samples=1):
    return jacobian_regularizer(f_out, z, n_samples=n_samples)
"""

TORCHDEQ_ANDERSON = """from torchdeq.solver import anderson_solver
def anderson(f, z0, m=6, tol=1e-8, max_iter=1000):
    z, _, info = anderson_solver(f, z0[None], max_iter=max_iter, tol=tol, m=m)
    return z[0], int(info["nstep"])
"""

BYPASSES = [
    ("10", "heun-step", HEUN_PARTIAL, {REFUSED, REVIEW}),
    ("10", "heun-step", HEUN_CLOSURE, {REFUSED, REVIEW}),
    ("10", "heun-step", HEUN_SAVED_CODE, {REFUSED, REVIEW}),
    ("10", "heun-step", HEUN_HIDDEN_MODULE, {REVIEW}),
    ("10", "heun-inverse", HEUN_PARTIAL.replace("heun_step", "heun_inverse"), {REFUSED, REVIEW}),
    ("06", "anderson", ANDERSON_FIXED_POINT, {REFUSED}),
    ("06", "anderson", ANDERSON_SAVED_CODE, {REFUSED, REVIEW}),
    ("06", "anderson", TORCHDEQ_ANDERSON, {REFUSED}),
    ("01", "euler-step", EULER_TORCHDIFFEQ, {REFUSED}),
    ("01", "euler-integrate", EULER_TORCHDIFFEQ_MODULE, {REFUSED}),
    ("02", "rk4-step", RK4_LIBRARY, {REFUSED}),
    ("02", "error-norm", ERROR_NORM_LIBRARY, {REFUSED}),
    ("06", "mixing-weights", WEIGHTS_LIBRARY, {REFUSED}),
    ("06", "mixing-weights", WEIGHTS_DEQ_MODULE, {REFUSED}),
    ("06", "hutchinson", DEQ_HUTCHINSON_LIBRARY, {REFUSED}),
    ("08", "exact-divergence", DIVERGENCE_LIBRARY, {REFUSED}),
    ("08", "hutchinson", HUTCHINSON_LIBRARY, {REFUSED}),
]


@pytest.mark.parametrize("case", BYPASSES, ids=lambda c: f"{c[0]}-{c[1]}-{c[2].splitlines()[0][:30]}")
def test_each_bypass_is_refused_or_flagged_with_its_line(case):
    exercise, answer, source, expected = case
    findings = read(exercise, answer, source)
    assert expected <= kinds(findings), [f.text() for f in findings]
    lines = source.splitlines()
    for f in findings:
        assert 1 <= f.line <= len(lines), f.text()


def test_a_helper_in_another_answer_cell_does_not_launder_the_library():
    findings = read("06", "anderson", ANDERSON_THROUGH_HELPER, implicit_hook=HOOK_WITH_HELPER)
    refused = [f for f in findings if f.kind == REFUSED]
    assert refused and refused[0].line == 2 and "implicit-hook" in refused[0].why, [f.text() for f in findings]
    # the hook itself may use the library's fixed_point: the rule is per answer
    hook = answer_reading.read_answers(
        {**_solution_answers("06"), "implicit-hook": HOOK_WITH_HELPER}, "06", _setup("06")
    )["implicit-hook"]
    assert REFUSED not in kinds(hook), [f.text() for f in hook]


def test_the_findings_name_what_and_where():
    findings = read("10", "heun-step", HEUN_SAVED_CODE)
    texts = [f.text() for f in findings]
    assert any(f.line == 2 and f.what == "__code__" for f in findings), texts
    assert any(f.line == 4 and f.what == "getattr" and "built at run time" in f.why for f in findings), texts
    assert any(f.kind == REFUSED and "nodecourse.solvers._reversible.heun_step" in f.what for f in findings), texts
    assert any("reversible Heun step" in f.why for f in findings if f.kind == REFUSED), texts


def test_a_reexported_name_is_the_object_it_names():
    """``from nodecourse import fixed_point`` and ``nodecourse.deq._fixed_point.fixed_point`` are one function:
    an answer that may not reach the second may not reach the first."""
    assert answer_reading.canonical("nodecourse.fixed_point") == "nodecourse.deq._fixed_point.fixed_point"
    assert answer_reading.canonical("nodecourse.solvers.odeint") == "nodecourse.solvers._odeint.odeint"
    rule = reach.Reach(("nodecourse.deq._fixed_point",), "x")
    reader = answer_reading._Reader(answer_reading._Names({}), rule, {})
    assert reader.refusal("nodecourse.fixed_point")[0] == "nodecourse.deq._fixed_point"


# --- what is not flagged: the solutions, and ordinary answers -------------------------------------


@pytest.mark.parametrize("exercise", sorted(reach.ANSWERS))
def test_the_solutions_answers_are_not_flagged(exercise):
    answers = _solution_answers(exercise)
    assert set(answers) <= set(reach.ANSWERS[exercise]), "every answer cell has a declared reach"
    found = answer_reading.read_answers(answers, exercise, _setup(exercise))
    assert all(not f for f in found.values()), {a: [x.text() for x in f] for a, f in found.items() if f}


IDIOMATIC = [
    # (exercise, answer, source): ordinary PyTorch a learner writes
    (
        "01",
        "euler-step",
        "def euler_step(f, t, y, h):\n    # eval(f) would be wrong here: f is a function\n    return y + h * f(t, y)\n",
    ),
    (
        "01",
        "euler-integrate",
        "def euler_integrate(f, y0, t0, t1, n_steps):\n    h = (t1 - t0) / n_steps\n"
        "    y = y0\n    for k in range(n_steps):\n        y = euler_step(f, t0 + k * h, y, h)\n    return y\n",
    ),
    (
        "01",
        "residual-block",
        "class EulerResidualBlock(nn.Module):\n    def __init__(self, field):\n"
        "        super().__init__()\n        self.field = field\n\n    def forward(self, z):\n"
        "        if not self.training:\n            pass  # eval mode: same step\n"
        "        return euler_step(self.field, 0.0, z, 1.0)\n",
    ),
    (
        "02",
        "rk4-step",
        'def rk4_step(f, t, y, h):\n    """Classical RK4 (not exec\'d, not eval\'d)."""\n'
        "    k = [f(t, y)]\n    for c, a in ((0.5, 0.5), (0.5, 0.5), (1.0, 1.0)):\n"
        "        k.append(f(t + c * h, y + a * h * k[-1]))\n"
        "    return y + h / 6 * (k[0] + 2 * k[1] + 2 * k[2] + k[3])\n",
    ),
    (
        "02",
        "error-norm",
        "def error_norm(err, y0, y1, rtol, atol):\n"
        "    scale = atol + rtol * torch.max(y0.abs(), y1.abs())\n"
        "    print(f'eval mode: {scale.mean():.3g}')\n"
        "    return torch.sqrt(torch.mean((err / scale) ** 2)).item()\n",
    ),
    (
        "02",
        "step-control",
        "def propose_step(h, norm, order, safety=0.9, min_factor=0.2, max_factor=10.0):\n"
        "    factor = max_factor if norm == 0 else safety * norm ** (-1 / (order + 1))\n"
        "    return norm <= 1, h * min(max_factor, max(min_factor, factor))\n",
    ),
    ("03", "pad-zeros", "def pad_with_zeros(x, p):\n    return nn.functional.pad(x, (0, p))\n"),
    (
        "08",
        "dynamics",
        "class HutchinsonDynamics(nn.Module):\n    def __init__(self, field):\n        super().__init__()\n"
        "        self.field, self.probes = field, None\n        for i, width in enumerate((4, 4)):\n"
        "            setattr(self, f'unused{i}', nn.Identity())\n\n    def forward(self, t, state):\n"
        "        with torch.enable_grad():\n            z = state[:, :-1]\n"
        "            z = z if z.requires_grad else z.requires_grad_(True)\n            dz = self.field(t, z)\n"
        "            div = hutchinson_divergence(dz, z, getattr(self, 'probes'))\n"
        "        return torch.cat([dz, -div.unsqueeze(1)], dim=1)\n",
    ),
    (
        "03",
        "classifier",
        "class AnnulusClassifier(nn.Module):\n    def __init__(self, augment_dim):\n"
        "        super().__init__()\n        width = 2 + augment_dim\n"
        "        self.block = AugmentedBlock(MLPField(width, hidden=(32, 32), activation='relu'), augment_dim)\n"
        "        self.readout = nn.Linear(width, 1)\n        for m in self.modules():\n"
        "            if isinstance(m, nn.Linear):\n                nn.init.zeros_(m.bias)\n\n"
        "    def forward(self, x):\n        return self.readout(self.block(x))\n",
    ),
    (
        "03",
        "train",
        "import matplotlib.pyplot as plt\n\ndef train(model, x, y, epochs, lr):\n"
        "    model.train()\n    opt = torch.optim.Adam(model.parameters(), lr=lr)\n    losses = []\n"
        "    for _ in range(epochs):\n        opt.zero_grad()\n"
        "        loss = nn.functional.smooth_l1_loss(model(x), y)\n        loss.backward()\n        opt.step()\n"
        "        losses.append(loss.item())\n    model.eval()\n    with torch.no_grad():\n        model(x)\n"
        "    plt.plot(losses)\n    plt.title('training loss (then eval mode)')\n    plt.close()\n    return losses\n",
    ),
    (
        "03",
        "augmented-block",
        "class AugmentedBlock(nn.Module):\n    def __init__(self, field, augment_dim, tol=1e-3):\n"
        "        super().__init__()\n        self.field, self.augment_dim, self.tol = field, augment_dim, tol\n"
        "        self.last_nfe = 0\n\n    def forward(self, x):\n        z0 = pad_with_zeros(x, self.augment_dim)\n"
        "        t = torch.tensor([0.0, 1.0], dtype=x.dtype)\n"
        "        sol = odeint(self.field, z0, t, method='dopri5', rtol=self.tol, atol=self.tol)\n"
        "        self.last_nfe = int(sol.stats['nfe'])\n        return sol.ys[-1]\n",
    ),
    (
        "04",
        "adjoint-dynamics",
        "def adjoint_dynamics(func, params, t, z, a):\n    with torch.enable_grad():\n"
        "        z = z.detach().requires_grad_(True)\n        f = func(t, z)\n"
        "        g = torch.autograd.grad(f, (z, *params), a, allow_unused=True)\n"
        "    return f.detach(), -g[0], [torch.zeros_like(p) if v is None else -v for v, p in zip(g[1:], params)]\n",
    ),
    (
        "04",
        "flat-memory",
        "def peak_bytes(use_adjoint, n_steps):\n    def once():\n        if use_adjoint:\n"
        "            z1 = LearnerAdjoint.apply(field3, 1.0, n_steps, y03, *params3)\n        else:\n"
        "            z1 = odeint(field3, y03, torch.tensor([0.0, 1.0]), method='rk4', step_size=1 / n_steps).ys[-1]\n"
        "        z1.pow(2).sum().backward()\n    return measure_peak(once)\n",
    ),
    (
        "05",
        "masked-update",
        "def masked_update(cell, h, x, m):\n    cell.eval()  # no dropout here\n"
        "    h_new = cell(torch.cat([x * m, m], dim=-1), h)\n    seen = m.amax(dim=-1, keepdim=True) > 0\n"
        "    return torch.where(seen, h_new, h)\n",
    ),
    (
        "05",
        "odernn-step",
        "def odernn_step(func, cell, h, t_prev, t, x, m):\n"
        "    sol = odeint(func, h, torch.stack([t_prev, t]), method='euler', step_size=STEP)\n"
        "    return masked_update(cell, sol.ys[-1], x, m), sol.stats['nfe']\n",
    ),
    (
        "06",
        "mixing-weights",
        "def mixing_weights(G, lam=1e-10):\n    H = G @ G.T\n"
        "    H = H + lam * H.diagonal().mean() * torch.eye(len(G), dtype=G.dtype)\n"
        "    a = torch.linalg.solve(H, torch.ones(len(G), dtype=G.dtype))\n    return a / a.sum()\n",
    ),
    (
        "06",
        "anderson",
        "import functools\n\ndef anderson(f, z0, m=6, tol=1e-8, max_iter=1000):\n"
        "    weights = functools.partial(mixing_weights, lam=1e-10)\n    xs, gs, z = [], [], z0\n"
        "    for k in range(1, max_iter + 1):\n        fz = f(z)\n        g = fz - z\n"
        "        if g.norm() <= tol * fz.norm():\n            return z, k\n"
        "        xs, gs = (xs + [z])[-m:], (gs + [g])[-m:]\n"
        "        z = weights(torch.stack(gs)) @ (torch.stack(xs) + torch.stack(gs))\n    return z, max_iter\n",
    ),
    (
        "06",
        "implicit-hook",
        "def make_implicit_hook(f_z, z, tol=1e-12):\n    def hook(grad):\n"
        "        def step(y):\n            return torch.autograd.grad(f_z, z, y, retain_graph=True)[0] + grad\n"
        "        return fixed_point(step, grad, method='anderson', tol=tol, max_iter=200).z\n    return hook\n",
    ),
    (
        "06",
        "hutchinson",
        "def hutchinson(f_out, z, n_samples=1):\n    est = torch.zeros(z.shape[0], dtype=z.dtype)\n"
        "    for _ in range(n_samples):\n        v = torch.randn_like(f_out)\n"
        "        (u,) = torch.autograd.grad(f_out, z, v, create_graph=True)\n"
        "        est = est + u.pow(2).sum(dim=1)\n    return est / n_samples\n",
    ),
    (
        "08",
        "exact-divergence",
        "def exact_divergence(f_out, z):\n    cols = []\n    for i in range(z.shape[1]):\n"
        "        g = torch.autograd.grad(f_out[:, i].sum(), z, create_graph=True)[0]\n        cols.append(g[:, i])\n"
        "    return torch.stack(cols, dim=1).sum(dim=1)\n",
    ),
    (
        "08",
        "log-prob",
        "def log_prob(dynamics, x, probes, t1=1.0):\n    dynamics.probes = probes\n"
        "    state0 = torch.cat([x, x.new_zeros(x.shape[0], 1)], dim=1)\n"
        "    sol = odeint(dynamics, state0, torch.tensor([0.0, t1]), method='dopri5', rtol=1e-8, atol=1e-8)\n"
        "    end = sol.ys[-1]\n    return standard_normal_log_prob(end[:, :-1]) - end[:, -1], sol.stats['nfe']\n",
    ),
    (
        "09",
        "accuracy-at",
        "def accuracy_at(model, x, y, tol):\n    model.eval()\n    with torch.no_grad():\n"
        "        sol = model.block.solve(x, rtol=tol, atol=tol)\n"
        "        pred = model.readout(sol.ys[-1]).argmax(dim=1)\n"
        "    return (pred == y).float().mean().item(), int(sol.stats['nfe'])\n",
    ),
    (
        "09",
        "directional-derivative",
        "def directional_derivative(loss_fn, params, direction, h):\n"
        "    saved = [p.detach().clone() for p in params]\n    with torch.no_grad():\n"
        "        for p, v in zip(params, direction):\n            p.add_(h * v)\n        up = float(loss_fn())\n"
        "        for p, s, v in zip(params, saved, direction):\n            p.copy_(s - h * v)\n"
        "        down = float(loss_fn())\n        for p, s in zip(params, saved):\n            p.copy_(s)\n"
        "    return (up - down) / (2 * h)\n",
    ),
    (
        "10",
        "kinetic-dynamics",
        "compiled = torch.compile  # not used: eval mode is fine without it\n\n"
        "def kinetic_dynamics(field, t, state):\n    z = state[..., :-1]\n    f = field(t, z)\n"
        "    return torch.cat([f, (f * f).sum(dim=-1, keepdim=True)], dim=-1)\n",
    ),
    (
        "10",
        "heun-step",
        "def reversible_heun_step(func, t, h, y, zh, f):\n    zh1 = 2 * y - zh + h * f\n"
        "    f1 = func(torch.as_tensor(t + h, dtype=y.dtype), zh1)\n    return y + h / 2 * (f + f1), zh1, f1\n",
    ),
    (
        "10",
        "seminorm",
        "def make_seminorm(n):\n    def norm(x):\n        head = x[: 2 * n]\n"
        "        return head.pow(2).mean().sqrt()\n    return norm\n",
    ),
    (
        "09",
        "route-error",
        "%matplotlib inline\n\ndef route_error(model, x, route, directions):\n"
        "    params = list(model.block.field.parameters())\n    names = [n for n, _ in model.named_modules()]\n"
        "    act = getattr(nn, 'Tanh')\n    deployed = model.block.solver\n    try:\n"
        "        model.block.solver = deployed.replace(gradient=route)\n"
        "        grads = torch.autograd.grad(model(x).sum(), params)\n"
        "        model.block.solver = deployed.replace(rtol=1e-10, atol=1e-10)\n"
        "        fd = [directional_derivative(lambda: model(x).sum(), params, v, 1e-4) for v in directions]\n"
        "    finally:\n        model.block.solver = deployed\n"
        "    ad = [sum(float((g * d).sum()) for g, d in zip(grads, v)) for v in directions]\n"
        "    return math.sqrt(sum((a - f) ** 2 for a, f in zip(ad, fd))) / math.sqrt(sum(f * f for f in fd))\n",
    ),
]


def test_there_are_at_least_twenty_ordinary_answers():
    assert len(IDIOMATIC) >= 20
    joined = "\n".join(s for _, _, s in IDIOMATIC)
    for word in ("eval()", ".train()", ".modules()", "no_grad", "torch.compile", "plt.plot", "eval mode"):
        assert word in joined, word


@pytest.mark.parametrize("case", IDIOMATIC, ids=lambda c: f"{c[0]}-{c[1]}")
def test_ordinary_answers_are_not_flagged(case):
    exercise, answer, source = case
    findings = read(exercise, answer, source)
    assert not findings, [f.text() for f in findings]


def test_strings_comments_and_methods_named_like_builtins_are_not_code():
    source = (
        "def f(model, x):\n"
        "    '''Runs exec and eval in __code__ terms? No: a docstring.'''\n"
        "    # getattr(R, 'heun' + '_step').__code__ would be flagged; this comment is not\n"
        "    model.eval()\n    model.compile()\n    n = len(list(model.modules()))\n"
        "    text = 'sys.modules importlib __import__ eval exec compile'\n"
        "    return torch.compile(model)(x), n, text\n"
    )
    assert answer_reading.read_answer(source) == []


@pytest.mark.parametrize(
    "source, name",
    [
        ("y = eval('1 + 1')", "eval"),
        ("exec(code)", "exec"),
        ("c = compile(src, 'x', 'exec')", "compile"),
        ("m = __import__('tor' + 'chdiffeq')", "__import__"),
        ("fn = globals()['heun' + '_step']", "globals"),
        ("import importlib\nm = importlib.import_module(name)", "importlib"),
        ("import sys\nm = sys.modules['nodecourse.solvers']", "modules"),
        ("fn = getattr(obj, name)", "getattr"),
        ("setattr(obj, name, value)", "setattr"),
        ("g = f.__closure__[0].cell_contents", "__closure__"),
        ("d = module.__dict__", "__dict__"),
        ("import types\ng = types.FunctionType(code, {})", "FunctionType"),
        ("import operator\nf = operator.attrgetter(name)(m)", "attrgetter"),
        ("import pickle\nf = pickle.loads(blob)", "loads"),
        ("import os\nos.system('python answer.py')", "system"),
        ("!python -c 'import torchdiffeq'", "a shell command"),
        ("%run helper.py", "%run"),
        ("%timeit exec(code)", "exec"),
        ("f.__qualname__ = 'other'", "__qualname__"),
        ("names = vars()", "vars"),
        ("import torch\nf = torch.load(buffer, weights_only=False)", "torch.load"),
        (
            "import nodecourse.solvers._reversible as R\nR.heun_step = lambda *a: None",
            "nodecourse.solvers._reversible.heun_step",
        ),
    ],
)
def test_what_the_reader_cannot_decide_is_flagged(source, name):
    findings = answer_reading.read_answer(source)
    assert any(f.kind == REVIEW and f.what == name for f in findings), [f.text() for f in findings]


def test_every_answer_of_every_converted_exercise_has_a_declared_reach():
    from nodecourse.course import tasks

    for exercise in tasks.CONVERTED:
        answers = _solution_answers(exercise)
        assert answers and set(answers) == set(reach.ANSWERS[exercise]), exercise
    # tasks that disabled nothing before now disable the library's own answer while they run
    for exercise, check, name in [
        ("02", "rk4-step-matches", "nodecourse.solvers:odeint"),
        ("02", "rk4-order", "torchdiffeq._impl.odeint:odeint"),
        ("02", "error-norm", "nodecourse.solvers._control:rms"),
        ("08", "exact-divergence", "nodecourse.models._flows:divergence_exact"),
        ("08", "hutchinson", "nodecourse.models._flows:divergence_hutchinson"),
        ("06", "mixing-weights", "nodecourse.deq._anderson:anderson_weights"),
        ("01", "euler-step", "torchdiffeq._impl.odeint:odeint"),
        ("06", "anderson", "torchdeq.solver.anderson:anderson_solver"),
    ]:
        assert name in tasks.get_task(exercise, check).library_answers, (exercise, check)
