"""Models that wrap a solve: fields and blocks, augmentation, latent ODEs.

- fields and blocks: :class:`MLPField`, :class:`ODEBlock`, :class:`ResidualStack`, the digit classifiers
  and their helpers;
- lesson 7's four ways to spend depth: the middles (:class:`ODECore`, :class:`DEQCore`,
  :class:`UnrolledCore`, their shared :class:`InjectedBlock`) in one :class:`DepthClassifier`;
- augmented neural ODEs: :class:`AugmentedODE`, :func:`augmented_node`, :func:`plain_node`, :func:`fit_augmented`;
- :mod:`nodecourse.models.latent`: latent ODEs, ODE-RNN, GRU-D and the PhysioNet baselines, trained at
  the settings of :class:`PhysioNetSettings` (:data:`PHYSIONET_PUBLISHED`, :data:`PHYSIONET_COURSE`);
- continuous normalising flows: :class:`CNF`, :func:`divergence_exact`, :func:`divergence_hutchinson`;
- kinetic and Jacobian regularisers integrated along the solve: :func:`regularised_block`;
- lesson 10's two-moons classifier: :class:`MoonsODE`;
- small fields with known answers (:class:`LinearField`, :class:`Rotation`, :class:`AutonomousField`)
  and the :class:`Readout` frame.

This file is the package's surface: import from ``nodecourse.models`` (and ``nodecourse.models.latent``).
The modules behind it are private (``_blocks``, ``_depth``, ``_augment``, ``_flows``, ``_regularised``,
``_moons``, ``_linear``, ``_physionet_settings``).
"""

from nodecourse.models import _augment, _blocks, _depth, _flows, _linear, _moons, _physionet_settings, _regularised
from nodecourse.models._augment import *  # noqa: F403
from nodecourse.models._blocks import *  # noqa: F403
from nodecourse.models._depth import *  # noqa: F403
from nodecourse.models._flows import *  # noqa: F403
from nodecourse.models._linear import *  # noqa: F403
from nodecourse.models._moons import *  # noqa: F403
from nodecourse.models._physionet_settings import *  # noqa: F403
from nodecourse.models._regularised import *  # noqa: F403

__all__ = [
    *_augment.__all__,
    *_blocks.__all__,
    *_depth.__all__,
    *_flows.__all__,
    *_linear.__all__,
    *_moons.__all__,
    *_physionet_settings.__all__,
    *_regularised.__all__,
    "latent",  # noqa: F405 (the subpackage, imported by name)
]
