"""Models that wrap a solve: fields and blocks, augmentation, latent ODEs.

- :mod:`nodecourse.models.blocks`: :class:`MLPField`, :class:`ODEBlock`, :class:`ResidualStack`,
  the digit classifiers and their helpers (exported here: ``from nodecourse.models import ODEBlock``);
- :mod:`nodecourse.models.depth`: the middles of lesson 7's four ways to spend depth (:class:`ODECore`,
  :class:`DEQCore`, :class:`UnrolledCore`, their shared :class:`InjectedBlock`) in one :class:`DepthClassifier`;
- :mod:`nodecourse.models.augment`: augmented neural ODEs (:class:`AugmentedODE`);
- :mod:`nodecourse.models.latent`: latent ODEs, ODE-RNN, GRU-D and the PhysioNet baselines;
- :mod:`nodecourse.models.flows`: continuous normalising flows (:class:`CNF`) and trace estimators;
- :mod:`nodecourse.models.regularised`: kinetic and Jacobian regularisers integrated along the solve
  (:func:`~nodecourse.models.regularised.regularised_block`);
- :mod:`nodecourse.models.moons`: lesson 10's two-moons classifier (:class:`MoonsODE`);
- :mod:`nodecourse.models.linear`: small fields with known answers (:class:`LinearField`,
  :class:`Rotation`, :class:`AutonomousField`) and the :class:`Readout` frame.
"""

from nodecourse.models.blocks import (
    MLPField,
    ODEBlock,
    ODENetClassifier,
    ResidualStack,
    ResNetClassifier,
    accuracy,
    accuracy_vs_steps,
    count_parameters,
    matched_field_width,
    mlp,
    train_classifier,
)
from nodecourse.models.depth import DepthClassifier, DEQCore, InjectedBlock, ODECore, UnrolledCore
from nodecourse.models.linear import AutonomousField, LinearField, Readout, Rotation
from nodecourse.models.moons import MoonsODE

__all__ = [
    "AutonomousField",
    "DEQCore",
    "DepthClassifier",
    "InjectedBlock",
    "LinearField",
    "MLPField",
    "MoonsODE",
    "ODEBlock",
    "ODECore",
    "ODENetClassifier",
    "Readout",
    "ResidualStack",
    "ResNetClassifier",
    "Rotation",
    "UnrolledCore",
    "accuracy",
    "accuracy_vs_steps",
    # modules imported by name
    "augment",
    "flows",
    "latent",
    "physionet_settings",
    "regularised",
    "count_parameters",
    "matched_field_width",
    "mlp",
    "train_classifier",
]
