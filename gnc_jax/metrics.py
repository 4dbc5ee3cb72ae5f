"""Generalized neural collapse metrics (GNC1/2/3, eqs. (6)-(8)), NCC accuracy and the NC2 ETF distance.

The public face of :mod:`gnc_jax._src.metrics`."""

from gnc_jax._src.metrics import (
    class_major_labels,
    class_means,
    gnc1,
    gnc2,
    gnc3,
    ncc_accuracy,
    nc2_etf_distance,
    collapse_report,
)

__all__ = [
    "class_major_labels",
    "class_means",
    "gnc1",
    "gnc2",
    "gnc3",
    "ncc_accuracy",
    "nc2_etf_distance",
    "collapse_report",
]
