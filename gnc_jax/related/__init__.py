"""Related theory from the other source papers (``../shared/papers/``), built on the core.

* :mod:`gnc_jax.related.imbalanced` — imbalanced UFM with non-negative features, closed form and
  minority collapse (paper 002).
* :mod:`gnc_jax.related.class_means` — softmax weights against centred class means, class-mean
  initialisation of a softmax layer (paper 000).
* :mod:`gnc_jax.related.rmt` — Theorem 4.8 / Algorithm 1 of the large-dimensional softmax classifier,
  binary and k-class, with predicted train and test accuracy (paper 003).
* :mod:`gnc_jax.related.gsl` — generalized softmax learning: the B matrix and its SVD features, forward,
  reverse and joint softmax models, stationarity and the Pythagorean identity (paper 004).
"""

from gnc_jax.related import class_means, gsl, rmt
from gnc_jax.related.imbalanced import (
    ImbalancedPrediction,
    ImbalancedSettings,
    ImbalancedSolution,
    centred_scaled_means,
    geometry_report,
    imbalanced_loss,
    kkt_residual,
    predict_imbalanced,
    solve_ufm_imbalanced,
)

__all__ = [
    "class_means",
    "gsl",
    "rmt",
    "ImbalancedPrediction",
    "ImbalancedSettings",
    "ImbalancedSolution",
    "centred_scaled_means",
    "geometry_report",
    "imbalanced_loss",
    "kkt_residual",
    "predict_imbalanced",
    "solve_ufm_imbalanced",
]
