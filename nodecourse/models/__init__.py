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

from nodecourse.models._augment import (
    AUGMENTED_LOSSES,
    FLOW_READOUTS,
    AugmentedODE,
    FitLog,
    FlowModel,
    ProjectionReadout,
    ResNetModel,
    augmented_node,
    fit_augmented,
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
    PROBE_NOISES,
    TRACE_ESTIMATORS,
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
    LATENT_ODE_REPO,
    PHYSIONET_COURSE,
    PHYSIONET_COURSE_SOURCES,
    PHYSIONET_NOT_FOLLOWED,
    PHYSIONET_PUBLISHED,
    PHYSIONET_PUBLISHED_SOURCES,
    PhysioNetSettings,
    physionet_settings,
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
    "AUGMENTED_LOSSES",
    "ProjectionReadout",
    "FLOW_READOUTS",
    "ResNetModel",
    "augmented_node",
    "fit_augmented",
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
    "PROBE_NOISES",
    "TRACE_ESTIMATORS",
    "check_rows_independent",
    "divergence_exact",
    "divergence_hutchinson",
    "hutchinson_variance",
    "sample_probes",
    "standard_normal_log_prob",
    "two_moons",
    "LATENT_ODE_REPO",
    "PhysioNetSettings",
    "PHYSIONET_COURSE",
    "PHYSIONET_PUBLISHED",
    "PHYSIONET_PUBLISHED_SOURCES",
    "PHYSIONET_COURSE_SOURCES",
    "PHYSIONET_NOT_FOLLOWED",
    "physionet_settings",
    "REGULARISED_ARGS",
    "RegularisedBlock",
    "RegularisedField",
    "regularised_block",
    "latent",
]
