"""ReinPatch in pure PyTorch: no darts, sktime, pandas or file I/O in this subpackage."""

from .backbone import Backbone, BackboneConfig, PatchTokeniser
from .grpg import PolicyLoss, policy_loss, self_critical_advantages
from .config import ReinPatchConfig
from .covariates import CovariateEmbedding, Covariates
from .network import ReinPatchNetwork, TrainingLosses
from .patchers import (
    PATCHER_NAMES,
    LearnedPatcher,
    Patcher,
    Patching,
    RandomPatcher,
    UniformPatcher,
    VolatilityPatcher,
    make_patcher,
    plackett_luce_log_prob,
    uniform_starts,
)
from .policies import DEFAULT_POLICY, POLICY_NAMES, DensityPolicy, OffsetPolicy, TopKPolicy
from .revin import InstanceStats, RevIN

__all__ = [
    "Backbone", "BackboneConfig", "PatchTokeniser", "PolicyLoss", "self_critical_advantages",
    "policy_loss", "ReinPatchConfig", "Covariates", "CovariateEmbedding", "ReinPatchNetwork",
    "TrainingLosses", "POLICY_NAMES",
    "DEFAULT_POLICY", "OffsetPolicy", "DensityPolicy", "TopKPolicy", "uniform_starts",
    "PATCHER_NAMES", "LearnedPatcher", "Patcher", "Patching", "RandomPatcher", "UniformPatcher",
    "VolatilityPatcher", "make_patcher", "plackett_luce_log_prob", "InstanceStats", "RevIN",
]
