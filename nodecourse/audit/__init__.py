"""The five-step audit of a continuous or implicit model (lesson 9, ``nodecourse audit``).

    from nodecourse.audit import audit
    report = audit(model, train=(x, y), test=(x, y), task="classification", quick=True)
    report.steps[4].verdict        # "ok", "warning", "problem", "undecided", "not measured" or "failed"
    report.save("audit.html")      # one self-contained file; also to_json(), to_markdown()
    audit(..., out="audit.html")   # written (with .json and .md beside it) whatever the steps did

The steps, each with a verdict, a sentence with its numbers, the measurements and figures:

1. an explicit baseline at matched parameters and compute (:mod:`~nodecourse.audit._step1_baseline`);
2. solver work per input (:mod:`~nodecourse.audit._step2_work`);
3. a test-time tolerance sweep (:mod:`~nodecourse.audit._step3_tolerance`);
4. difficult regimes: a longer horizon, stiffness, input noise, distribution shift
   (:mod:`~nodecourse.audit._step4_regimes`);
5. gradients against finite differences (:mod:`~nodecourse.audit._step5_gradients`).

The solves are found by walking the model for the library's blocks (:mod:`~nodecourse.audit._discovery`)
and by watching one forward pass for calls to ``torchdiffeq.odeint``, ``torchdiffeq.odeint_adjoint``,
``nodecourse.odeint`` and torchdeq's DEQ (:mod:`~nodecourse.audit._hook`, :mod:`~nodecourse.audit._observed`):
a model is audited as written, its solves changed on their calls and restored afterwards. Each solve
is a call's identity (its site, the function solved, the settings it was called with), so two solves
through one helper are two solves, each swept from its own setting. The forward pass is watched in
eval mode and in the mode the model trains in; where they differ, the report says how and step 5
judges the training route. torchsde and torchdyn are refused by name (the audit measures deterministic
solves it can watch), and a failure of the audit's own watching names the solve, never the data.
:class:`TorchdiffeqBlock` stays as an explicit option (torchdiffeq's defaults); a sequence model on a
shared time grid goes through :class:`SharedInputs` (:mod:`~nodecourse.audit._adapters`). Each
verdict's rule and threshold is written in its step's module docstring.

This file is the package's surface: import from ``nodecourse.audit``. The modules behind it are
private (``_run``, the steps ``_step1_baseline`` ... ``_step5_gradients``, the watching in ``_hook``
and ``_observed``, and their helpers); their docstrings remain the place each rule is written.
"""

from nodecourse.audit import _adapters, _baseline, _discovery, _hook, _observed, _report, _run
from nodecourse.audit._adapters import *  # noqa: F403
from nodecourse.audit._baseline import *  # noqa: F403
from nodecourse.audit._discovery import *  # noqa: F403
from nodecourse.audit._hook import *  # noqa: F403
from nodecourse.audit._observed import *  # noqa: F403
from nodecourse.audit._report import *  # noqa: F403
from nodecourse.audit._run import *  # noqa: F403

__all__ = [
    *_adapters.__all__,
    *_baseline.__all__,
    *_discovery.__all__,
    *_hook.__all__,
    *_observed.__all__,
    *_report.__all__,
    *_run.__all__,
]
