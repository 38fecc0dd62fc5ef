"""ReinPatch in pure PyTorch: no darts, sktime, pandas or file I/O in this subpackage.

It holds the method only: the learned patcher with the density policy (exact and at-most
budgets, one or two levels), the reference patchers (uniform, random, volatility), the
tokeniser, the Transformer backbone with the time-aligned ``copy`` readout and its per-step
skip, covariates, RevIN and the GRPG step. The ablation tables of other policies and readouts
are archived with the commit that produced them (``benchmarks/results/archive/ablations``).
"""

from .backbone import Backbone, PatchTokeniser
from .grpg import PolicyLoss, policy_loss, self_critical_advantages
from .config import (BackboneConfig, PatcherConfig, ReinPatchConfig, TrainingConfig)
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
    uniform_starts,
)
from .policies import DensityPolicy
from .revin import InstanceStats, RevIN

__all__ = [
    "Backbone", "BackboneConfig", "PatcherConfig", "TrainingConfig", "PatchTokeniser",
    "PolicyLoss", "self_critical_advantages", "policy_loss", "ReinPatchConfig", "Covariates",
    "CovariateEmbedding", "ReinPatchNetwork", "TrainingLosses", "DensityPolicy",
    "uniform_starts", "PATCHER_NAMES", "LearnedPatcher", "Patcher", "Patching",
    "RandomPatcher", "UniformPatcher", "VolatilityPatcher", "make_patcher", "InstanceStats",
    "RevIN",
]
