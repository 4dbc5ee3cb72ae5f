"""Primitives on OB(d, K): the tangent bases shared by the host polish and the interior-point solve, and
the per-column normalisation and tangent projection of a stack of configurations."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_configuration

from gnc_jax._src.sphere import normalize_columns, tangent_bases, tangent_project


@pytest.mark.parametrize("d, K", [(2, 5), (3, 9), (8, 4)])
def test_tangent_bases_span_each_columns_complement(d, K, x64):
    W = random_configuration(d, d, K)
    # The sign branch of the reflection at both ends: e_1, -e_1 and a column with w_1 = 0.
    W[:, 0] = np.eye(d)[0]
    W[:, 1] = -np.eye(d)[0]
    W[0, 2], W[1:, 2] = 0.0, W[1:, 2] / np.linalg.norm(W[1:, 2])
    for B in (tangent_bases(W), np.asarray(jax.jit(tangent_bases)(jnp.asarray(W)))):
        assert B.shape == (K, d, d - 1)
        # Orthonormal columns (B_k^T B_k = I), each orthogonal to its w_k.
        np.testing.assert_allclose(
            np.einsum("kdm,kdn->kmn", B, B), np.broadcast_to(np.eye(d - 1), (K, d - 1, d - 1)), atol=1e-14
        )
        np.testing.assert_allclose(np.einsum("dk,kdm->km", W, B), 0.0, atol=1e-14)
    # The host (numpy) and compiled (jax) paths give the same bases, so the two solvers agree on
    # their tangent coordinates.
    np.testing.assert_allclose(np.asarray(tangent_bases(jnp.asarray(W))), tangent_bases(W), atol=1e-15)


def test_a_stack_of_configurations_normalises_each_members_own_columns(x64):
    # (R, d, K): every member's every column is a unit vector, in the direction it had (not divided
    # by a norm taken across the members); one member alone is not collapsed to +-1 entries.
    for R in (1, 4):
        X = jax.random.normal(jax.random.key(0), (R, 3, 7))
        Y = np.asarray(normalize_columns(X))
        np.testing.assert_allclose(np.linalg.norm(Y, axis=1), 1.0, atol=1e-15)
        np.testing.assert_allclose(Y * np.linalg.norm(np.asarray(X), axis=1, keepdims=True), X, atol=1e-14)
        G = np.asarray(tangent_project(Y, jax.random.normal(jax.random.key(1), X.shape)))
        np.testing.assert_allclose(np.sum(G * Y, axis=1), 0.0, atol=1e-14)
