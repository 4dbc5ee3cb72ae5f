"""Closed forms and bounds of the paper (Theorem 3.3's optimal codes, Theorem 3.9's bounds on rho*).

The public face of :mod:`gnc_jax._src.theory`."""

from gnc_jax._src.theory import (
    regular_polygon,
    simplex_etf,
    cross_polytope,
    softmax_code_closed_form,
    tammes_closed_form,
    bounds_applicable,
    softmax_code_bounds,
)

__all__ = [
    "regular_polygon",
    "simplex_etf",
    "cross_polytope",
    "softmax_code_closed_form",
    "tammes_closed_form",
    "bounds_applicable",
    "softmax_code_bounds",
]
