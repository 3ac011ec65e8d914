"""Models that wrap a solve: fields and blocks, augmentation, latent ODEs.

- fields and blocks: :class:`MLPField`, :class:`ODEBlock`, :class:`ResidualStack`, the digit classifiers
  and their helpers;
- lesson 7's four ways to spend depth: the middles (:class:`ODECore`, :class:`DEQCore`,
  :class:`UnrolledCore`, their shared :class:`InjectedBlock`) in one :class:`DepthClassifier`;
- augmented neural ODEs: :class:`AugmentedODE`, :func:`augmented_node`, :func:`plain_node`, :func:`fit`;
- :mod:`nodecourse.models.latent`: latent ODEs, ODE-RNN, GRU-D and the PhysioNet baselines, trained at
  the settings of :class:`PhysioNetSettings` (:data:`PUBLISHED`, :data:`COURSE`);
- continuous normalising flows: :class:`CNF`, :func:`divergence_exact`, :func:`divergence_hutchinson`;
- kinetic and Jacobian regularisers integrated along the solve: :func:`regularised_block`;
- lesson 10's two-moons classifier: :class:`MoonsODE`;
- small fields with known answers (:class:`LinearField`, :class:`Rotation`, :class:`AutonomousField`)
  and the :class:`Readout` frame.

This file is the package's surface: import from ``nodecourse.models`` (and ``nodecourse.models.latent``).
The modules behind it are private (``_blocks``, ``_depth``, ``_augment``, ``_flows``, ``_regularised``,
``_moons``, ``_linear``, ``_physionet_settings``).
"""

from nodecourse.models._augment import (
    LOSSES,
    READOUTS,
    AugmentedODE,
    FitLog,
    FlowModel,
    ProjectionReadout,
    ResNetModel,
    augmented_node,
    fit,
    make_readout,
    matched_resnet,
    pad_zeros,
    plain_node,
    sign_accuracy,
)
from nodecourse.models._blocks import (
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
from nodecourse.models._depth import DepthClassifier, DEQCore, InjectedBlock, ODECore, UnrolledCore
from nodecourse.models._flows import (
    CNF,
    NOISES,
    TRACES,
    CNFDynamics,
    FlowBatchMixingError,
    FlowDtypeError,
    FlowInputError,
    check_rows_independent,
    divergence_exact,
    divergence_hutchinson,
    hutchinson_variance,
    sample_probes,
    standard_normal_log_prob,
    two_moons,
)
from nodecourse.models._linear import AutonomousField, LinearField, Readout, Rotation
from nodecourse.models._moons import MoonsODE
from nodecourse.models._physionet_settings import (
    COURSE,
    COURSE_SOURCES,
    NOT_FOLLOWED,
    PUBLISHED,
    PUBLISHED_SOURCES,
    REPO,
    PhysioNetSettings,
    by_name,
)
from nodecourse.models._regularised import REGULARISED_ARGS, RegularisedBlock, RegularisedField, regularised_block

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
    "count_parameters",
    "matched_field_width",
    "mlp",
    "train_classifier",
    "AugmentedODE",
    "FitLog",
    "FlowModel",
    "LOSSES",
    "ProjectionReadout",
    "READOUTS",
    "ResNetModel",
    "augmented_node",
    "fit",
    "make_readout",
    "matched_resnet",
    "pad_zeros",
    "plain_node",
    "sign_accuracy",
    "CNF",
    "CNFDynamics",
    "FlowBatchMixingError",
    "FlowDtypeError",
    "FlowInputError",
    "NOISES",
    "TRACES",
    "check_rows_independent",
    "divergence_exact",
    "divergence_hutchinson",
    "hutchinson_variance",
    "sample_probes",
    "standard_normal_log_prob",
    "two_moons",
    "REPO",
    "PhysioNetSettings",
    "COURSE",
    "PUBLISHED",
    "PUBLISHED_SOURCES",
    "COURSE_SOURCES",
    "NOT_FOLLOWED",
    "by_name",
    "REGULARISED_ARGS",
    "RegularisedBlock",
    "RegularisedField",
    "regularised_block",
    "latent",
]
