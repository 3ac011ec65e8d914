"""Sequence models for irregularly sampled time series (lesson 5), and their baselines.

Inputs are a :class:`~nodecourse.data.physionet.PhysioNetSet` (normalised) or its tensors:
``times`` (K,) hours on a shared grid, ``values`` and ``mask`` (B, K, D), ``static`` and
``static_mask`` (B, S). A batch is processed over the *union* of its patients'
observation times: at each such time every patient's state moves forward, and only the
patients observed there get an update (the mask decides).

Models:

- :class:`ODERNN`: the hidden state follows an ODE between observation times
  (``nodecourse.odeint``), and a GRU update with the mask at each observation.
- :class:`GRUDelta`: the discrete baseline: the same GRU update, with the time since the
  patient's previous observation as an extra input, and no ODE in between.
- :class:`GRUD`: GRU-D (Che et al. 2018), the published discrete baseline: missing inputs decay
  from the last observed value towards the training mean, and the hidden state decays, both
  with the time since each variable was last observed; the mask is an input.
- :class:`LatentODE`: an ODE-RNN encoder run backwards in time gives q(z0); an ODE decoder
  maps z0 to the whole trajectory; trained on the ELBO plus a mortality head on z0.
- :class:`SummaryLogReg`: no sequence at all: logistic regression (scikit-learn) on
  per-variable mean, min, max, last value and count, plus the descriptors.

Time is divided by the fixed 48-hour horizon (never by a batch's own maximum).
Solver work (NFE, steps) is accumulated in ``model.solver_stats``.

Sizes, solvers and the training schedule come from the arguments (the course's defaults) or from
a :class:`~nodecourse.models._physionet_settings.PhysioNetSettings` (``build_model(..., settings=)``,
``fit_mortality(..., settings=)``), e.g. the published ones. The ODE-RNN pass is written for many short
gaps (a minute grid gives ~2,000 per batch): see :class:`RecurrentEncoder` (``fast``).

Where each piece lives (private modules; import from this package):

- ``_parts``: the masked updates, the vector field, the mortality head, the default solve, ``RunOutput``;
- ``_recurrent``: :class:`RecurrentEncoder`, :class:`RecurrentModel`, :func:`ODERNN`, :func:`GRUDelta`;
- ``_grud``: :class:`GRUD`, its encoder and the inputs it decays (δ, last values, training means);
- ``_latent_ode``: :class:`LatentODE`;
- ``_summary``: :class:`SummaryLogReg` and :func:`summary_features`;
- ``_build``: :data:`MODELS` and :func:`build_model`;
- ``_fit``: the training loop :func:`fit_mortality`, :class:`FitResult`, :func:`patient_batch`, :func:`predict_proba`,
  :func:`auc`;
- ``_interpolate``: :func:`holdout_mask`, :func:`interpolation_mse`, :func:`fit_interpolation`.
"""

from __future__ import annotations

from nodecourse.data.physionet import HORIZON_HOURS
from nodecourse.models.latent import _build, _fit, _grud, _interpolate, _latent_ode, _parts, _recurrent, _summary
from nodecourse.models.latent._build import *  # noqa: F403
from nodecourse.models.latent._fit import *  # noqa: F403
from nodecourse.models.latent._grud import *  # noqa: F403
from nodecourse.models.latent._interpolate import *  # noqa: F403
from nodecourse.models.latent._latent_ode import *  # noqa: F403
from nodecourse.models.latent._parts import *  # noqa: F403
from nodecourse.models.latent._parts import (
    _stats_zero as _stats_zero,  # private, but the tests reset an encoder's count with it
)
from nodecourse.models.latent._recurrent import *  # noqa: F403
from nodecourse.models.latent._summary import *  # noqa: F403

__all__ = [
    *_build.__all__,
    *_fit.__all__,
    *_grud.__all__,
    *_interpolate.__all__,
    *_latent_ode.__all__,
    *_parts.__all__,
    *_recurrent.__all__,
    *_summary.__all__,
    "HORIZON_HOURS",
]
