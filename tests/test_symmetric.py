import jax
import numpy as np
import pytest

from gnc_jax._src import symmetric
from gnc_jax._src.geometry import tammes_margin
from gnc_jax._src.theory import tammes_closed_form


def test_the_icosahedral_group_is_a_group_of_60_rotations():
    G = symmetric.icosahedral_group()
    assert G.shape == (60, 3, 3)
    np.testing.assert_allclose(G @ G.transpose(0, 2, 1), np.broadcast_to(np.eye(3), G.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(G), 1.0, atol=1e-12)
    flat = G.reshape(60, 9)
    for g in G[:7]:  # closed: every product is one of the 60 (and the 60 are distinct)
        prods = (g @ G).reshape(60, 9)
        nearest = np.min(np.linalg.norm(prods[:, None] - flat[None], axis=2), axis=1)
        assert np.max(nearest) < 1e-9
    assert np.min(np.linalg.norm(flat[:, None] - flat[None], axis=2) + 9 * np.eye(60)) > 0.1


def test_special_orbits_and_the_icosahedron():
    orbits = symmetric.special_orbits()
    assert sorted(orbits) == [12, 20, 30]
    for n, P in orbits.items():
        assert P.shape == (n, 3)
        np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0, atol=1e-14)
    # the 12 vertices are the proven Tammes optimum (Fejes Toth): max cos 1/sqrt(5)
    W = orbits[12].T
    assert np.max(W.T @ W - 2 * np.eye(12)) == pytest.approx(tammes_closed_form(3, 12), abs=1e-14)


@pytest.mark.parametrize("K", range(2, 200))
def test_decompositions_add_up_and_are_complete(K):
    found = symmetric.decompositions(K)
    for a, sizes in found:
        assert 60 * a + sum(sizes) == K and len(set(sizes)) == len(sizes)
    brute = {
        (a, tuple(n for n, f in zip((30, 20, 12), bits) if f))
        for a in range(4)
        for bits in np.ndindex(2, 2, 2)
        if 60 * a + np.dot(bits, (30, 20, 12)) == K
    }
    assert set(found) == brute


def test_starts_are_symmetric_and_their_score_is_exact():
    (W,) = symmetric.icosahedral_starts(72, jax.random.key(0), starts=4, steps=400)
    assert W.shape == (3, 72)
    for g in symmetric.icosahedral_group():  # g W is W with its columns permuted
        D = np.linalg.norm((g @ W)[:, :, None] - W[:, None, :], axis=0)
        assert np.max(np.min(D, axis=1)) < 1e-10
    assert tammes_margin(W) > 2 * np.sin(np.radians(20) / 2)  # the annealer separated the orbits
    assert symmetric.icosahedral_starts(100, jax.random.key(0), starts=4, steps=400) == []
