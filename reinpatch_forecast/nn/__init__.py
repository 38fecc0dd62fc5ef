"""ReinPatch in pure PyTorch: no darts, sktime, pandas or file I/O in this subpackage."""

from .backbone import Backbone, BackboneConfig, PatchTokeniser
from .grpg import PolicyLoss, group_advantages, policy_loss
from .network import ReinPatchConfig, ReinPatchNetwork, Rollout, TrainingLosses
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
)
from .revin import InstanceStats, RevIN

__all__ = [
    "Backbone", "BackboneConfig", "PatchTokeniser", "PolicyLoss", "group_advantages",
    "policy_loss", "ReinPatchConfig", "ReinPatchNetwork", "Rollout", "TrainingLosses",
    "PATCHER_NAMES", "LearnedPatcher", "Patcher", "Patching", "RandomPatcher", "UniformPatcher",
    "VolatilityPatcher", "make_patcher", "plackett_luce_log_prob", "InstanceStats", "RevIN",
]
