"""Related theory from the other source papers (``../shared/papers/``), built on the core.

* :mod:`gnc_jax.related.imbalanced` — imbalanced UFM with non-negative features, closed form and
  minority collapse (paper 002).
"""

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
