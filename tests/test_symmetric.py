import jax
import jax.numpy as jnp
import numpy as np
import pytest

from gnc_jax._src import symmetric
from gnc_jax._src.errors import InvalidArgument
from gnc_jax._src.geometry import tammes_margin
from gnc_jax._src.objectives import TAMMES
from gnc_jax._src.theory import tammes_closed_form

ORDERS = {"C2": 2, "C3": 3, "C5": 5, "D2": 4, "D3": 6, "D4": 8, "T": 12, "O": 24, "I": 60}


@pytest.mark.parametrize("name", ORDERS)
def test_rotation_groups_are_closed_groups_of_their_order(name):
    G = symmetric.rotation_group(name)
    n = ORDERS[name]
    assert G.shape == (n, 3, 3)
    np.testing.assert_allclose(G @ G.transpose(0, 2, 1), np.broadcast_to(np.eye(3), G.shape), atol=1e-12)
    np.testing.assert_allclose(np.linalg.det(G), 1.0, atol=1e-12)
    flat = G.reshape(n, 9)
    for g in G[:7]:  # closed: every product is one of the n (and the n are distinct)
        prods = (g @ G).reshape(n, 9)
        nearest = np.min(np.linalg.norm(prods[:, None] - flat[None], axis=2), axis=1)
        assert np.max(nearest) < 1e-9
    assert np.min(np.linalg.norm(flat[:, None] - flat[None], axis=2) + 9 * np.eye(n)) > 0.1


@pytest.mark.parametrize(
    "name, sizes",
    [
        ("C3", [1, 1]),
        ("D3", [2, 3, 3]),
        ("D4", [2, 4, 4]),
        ("T", [4, 4, 6]),
        ("O", [6, 8, 12]),
        ("I", [12, 20, 30]),
    ],
)
def test_special_orbits_are_the_axis_ends(name, sizes):
    G = symmetric.rotation_group(name)
    orbits = symmetric.special_orbits(name)
    assert [len(P) for P in orbits] == sizes
    for P in orbits:
        np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0, atol=1e-14)
        # orbit-stabiliser: the rotations fixing a point of an orbit of m points number |G| / m > 1
        fixing = np.sum(np.linalg.norm(G @ P[0] - P[0], axis=1) < 1e-9)
        assert fixing * len(P) == len(G) and fixing > 1


def test_special_orbits_hold_the_proven_optima():
    # 12 vertices of the icosahedron (Fejes Toth), 6 of the octahedron, 4 of the tetrahedron.
    for name, K in (("I", 12), ("O", 6), ("T", 4)):
        W = next(P.T for P in symmetric.special_orbits(name) if len(P) == K)
        assert np.max(W.T @ W - 2 * np.eye(K)) == pytest.approx(tammes_closed_form(3, K), abs=1e-14)


@pytest.mark.parametrize("name", ["C3", "D4", "T", "I"])
@pytest.mark.parametrize("K", range(2, 140, 3))
def test_decompositions_add_up_and_are_complete(name, K):
    n, sizes = ORDERS[name], [len(P) for P in symmetric.special_orbits(name)]
    found = symmetric.decompositions(name, K)
    for a, chosen in found:
        assert n * a + sum(sizes[i] for i in chosen) == K and len(set(chosen)) == len(chosen)
    brute = {
        tuple(sorted(s for s, f in zip(sizes, bits) if f))
        for bits in np.ndindex(*[2] * len(sizes))
        if np.dot(bits, sizes) <= K and (K - np.dot(bits, sizes)) % n == 0
    }
    assert {tuple(sorted(sizes[i] for i in chosen)) for _, chosen in found} == brute


@pytest.mark.parametrize("name, K", [("I", 72), ("C3", 40)])
def test_starts_are_symmetric_and_their_score_is_exact(name, K):
    ((W,),) = symmetric.symmetric_starts(K, jax.random.key(0), starts=4, steps=400, groups=(name,))
    assert W.shape == (3, K)
    for g in symmetric.rotation_group(name):  # g W is W with its columns permuted
        D = np.linalg.norm((g @ W)[:, :, None] - W[:, None, :], axis=0)
        assert np.max(np.min(D, axis=1)) < 1e-10
    assert tammes_margin(W) > 2 * np.sin(np.radians(20) / 2)  # the annealer separated the orbits
    assert symmetric.symmetric_starts(100, jax.random.key(0), starts=4, steps=400, groups=("I",)) == []


@pytest.mark.parametrize(
    "name, a, chosen",
    [("D5", 2, (0, 1))]
    + [pytest.param(*c, marks=pytest.mark.slow) for c in [("I", 1, (1, 2)), ("T", 2, (0,)), ("C3", 5, ())]],
)
def test_the_orbit_objective_is_the_whole_configurations(name, a, chosen):
    # From the pairs (representative, point) only: the loss is TAMMES.loss of the whole configuration
    # less t log(|G| / 2), with the same gradient in the representatives, and max_cos is exact.
    order = len(symmetric.rotation_group(name))
    with jax.enable_x64(True):
        objective = symmetric.orbit_objective(name, a, chosen)
        reps = jax.random.normal(jax.random.key(3), (3, a), jnp.float64)
        reps = reps / jnp.linalg.norm(reps, axis=0)
        W = objective.configuration(reps)
        K = W.shape[1]
        offsets = TAMMES.smoothing_offsets(jnp.ones(K, bool))
        for t in (0.1, 1e-3):
            whole = lambda r, t=t: TAMMES.loss({"W": objective.configuration(r)}, offsets, t)
            value, grad = objective.value_and_grad({"W": reps}, t)
            assert float(value) == pytest.approx(float(whole(reps)) - t * np.log(order / 2), rel=1e-12)
            np.testing.assert_allclose(grad["W"], jax.grad(whole)(reps), rtol=1e-9, atol=1e-12)
        max_cos = np.max(np.asarray(W.T @ W) - 2 * np.eye(K))
        assert float(objective.max_cos(reps)) == pytest.approx(max_cos, abs=1e-14)


@pytest.mark.parametrize(
    "name, a, chosen, a_pad",
    [("D5", 2, (0, 1), 4)]
    + [pytest.param(*c, marks=pytest.mark.slow) for c in [("C3", 5, (1,), 6), ("T", 1, (2,), 3)]],
)
def test_the_padded_objective_is_each_decompositions_objective(name, a, chosen, a_pad):
    # One padded objective serves every decomposition with a <= a_pad: with the first a
    # representatives and the chosen orbits unmasked, its loss, gradient (zero in the masked
    # representatives) and max_cos are those of the decomposition's own objective.
    orbits = len(symmetric.special_orbits(name))
    masks = (jnp.arange(a_pad) < a, jnp.isin(jnp.arange(orbits), jnp.array(chosen, int)))
    with jax.enable_x64(True):
        own, padded = (
            symmetric.orbit_objective(name, a, chosen),
            symmetric.padded_orbit_objective(name, a_pad),
        )
        reps = jax.random.normal(jax.random.key(4), (3, a_pad), jnp.float64)
        reps = reps / jnp.linalg.norm(reps, axis=0)
        for t in (0.1, 1e-3):
            value, grad = own.value_and_grad({"W": reps[:, :a]}, t)
            value_p, grad_p = padded.value_and_grad({"W": reps}, t, padded.weights(masks))
            assert float(value_p) == pytest.approx(float(value), rel=1e-13)
            np.testing.assert_allclose(grad_p["W"][:, :a], grad["W"], rtol=1e-10, atol=1e-14)
            assert not np.any(grad_p["W"][:, a:])
        assert float(padded.max_cos(reps, padded.weights(masks))) == pytest.approx(
            float(own.max_cos(reps[:, :a])), abs=1e-15
        )


def test_padded_starts_are_each_requests_starts_alone():
    # padded_symmetric_starts anneals the decompositions of several K in one program: what a request
    # gets is bit for bit what it gets alone (its block and the program's shapes do not depend on the
    # others), and the configurations are those each decomposition's own program finds from the same
    # starts (the first columns of a draw at the bucket's shape): the same exact scores.
    name, Ks, K_pad = "D3", (14, 15, 17), 24  # two decompositions of 14, one of 15 and of 17
    keys = {K: jax.random.key(K) for K in Ks}
    run = lambda Ks: symmetric.padded_symmetric_starts(name, [(K, keys[K], 2) for K in Ks], 3, 150, K_pad, 3)
    together, alone = run(Ks), run([15])[0]
    for x, y in zip(together[1], alone):
        np.testing.assert_array_equal(x, y)
    for K, found in zip(Ks, together):
        assert len(found) == len(symmetric.decompositions(name, K)) == (2 if K == 14 else 1)
        for i, ((a, chosen), x) in enumerate(zip(symmetric.decompositions(name, K), found)):
            with jax.enable_x64(True):  # as the solver draws them
                starts = jax.random.normal(
                    jax.random.fold_in(jax.random.fold_in(keys[K], 0), i), (3, 3, K_pad)
                )
                W, score = symmetric._anneal_program(name, a, chosen, 150)(np.asarray(starts)[:, :, :a])
            own = np.asarray(W)[symmetric._distinct_best(np.asarray(score), 2)]
            assert x.shape == own.shape == (len(own), 3, K)
            assert [tammes_margin(w) for w in x] == pytest.approx([tammes_margin(w) for w in own], rel=1e-9)


def test_starts_keep_the_best_few_distinct_best_first():
    # C3 at K = 20: 6 representatives and both poles; the best 3 of 6 starts, best first by their
    # exact min chord (recomputed here in float64), no two alike.
    (W,) = symmetric.symmetric_starts(20, jax.random.key(1), starts=6, steps=300, groups=("C3",), keep=3)
    assert W.shape == (3, 3, 20)
    chords = [tammes_margin(w) for w in W]
    assert chords == sorted(chords, reverse=True) and chords[0] > chords[1] > chords[2]


def test_copies_of_one_configuration_are_polished_once():
    # I at K = 72: one representative and the 12 vertices; 16 starts anneal to a few configurations
    # only, so keeping 16 returns each once.
    (W,) = symmetric.symmetric_starts(72, jax.random.key(0), starts=16, steps=400, groups=("I",), keep=16)
    chords = np.array([tammes_margin(w) for w in W])
    assert 1 <= len(W) < 16
    assert np.all(np.diff(chords) < -1e-9 * chords[1:])


@pytest.mark.parametrize("name", ["C1", "D0", "X3", "c3", "I2", ""])
def test_unknown_group_names_are_refused(name):
    with pytest.raises(InvalidArgument, match="symmetry group"):
        symmetric.rotation_group(name)
