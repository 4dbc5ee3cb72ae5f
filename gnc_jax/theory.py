"""Closed forms and bounds of the paper (Theorem 3.3's optimal codes, Theorem 3.9's bounds on rho*),
and the independent references for codes with K >> d (the Kerdock codes, the LP bound).

The public face of :mod:`gnc_jax._src.theory` and :mod:`gnc_jax._src.references`."""

from gnc_jax._src.theory import (
    regular_polygon,
    simplex_etf,
    cross_polytope,
    softmax_code_closed_form,
    tammes_closed_form,
    bounds_applicable,
    softmax_code_bounds,
)
from gnc_jax._src.references import (
    delsarte_bound,
    kerdock_code,
    max_cos_lower_bound,
    mutually_unbiased_bases,
)

__all__ = [
    "regular_polygon",
    "simplex_etf",
    "cross_polytope",
    "softmax_code_closed_form",
    "tammes_closed_form",
    "bounds_applicable",
    "softmax_code_bounds",
    "mutually_unbiased_bases",
    "kerdock_code",
    "delsarte_bound",
    "max_cos_lower_bound",
]
