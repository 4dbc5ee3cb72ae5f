"""Flax NNX modules, offline data and training for full-network verification of GNC (§2.2, §4, App. B)."""

from gnc_jax.nn.data import Dataset, digits, gaussian_mixture, load
from gnc_jax.nn.modules import (
    MLP,
    CMFClassifier,
    FixedClassifier,
    Network,
    NormalizedClassifier,
    ResNet,
    SphericalHead,
)
from gnc_jax.nn.train import (
    TrainSettings,
    classifier_weights,
    epoch_metrics,
    make_network,
    reference_rho,
    train,
)
from gnc_jax.nn.verify import nearest_assignment

__all__ = [
    "MLP",
    "CMFClassifier",
    "Dataset",
    "FixedClassifier",
    "Network",
    "NormalizedClassifier",
    "ResNet",
    "SphericalHead",
    "TrainSettings",
    "classifier_weights",
    "digits",
    "epoch_metrics",
    "gaussian_mixture",
    "load",
    "make_network",
    "nearest_assignment",
    "reference_rho",
    "train",
]
