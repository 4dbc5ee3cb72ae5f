"""The table of codes shipped with gnc_jax: codes without solving, certified again on load, against
independent references (proven Tammes optima, Theorem 3.3's closed form)."""

import json

import numpy as np
import pytest
from conftest import known_tammes
from test_cli import run_cli

import gnc_jax
from gnc_jax import store
from gnc_jax._src import known


def test_a_known_code_is_the_proven_optimum_where_one_is_known():
    proven = {(r["d"], r["K"]): r["angle"] for r in known_tammes() if r["proven"]}
    for d, K in ((3, 12), (3, 14), (3, 24)):
        code = gnc_jax.known_code("tammes", d, K)
        assert code.W.shape == (d, K)
        assert code.min_angle_deg == pytest.approx(proven[(d, K)], abs=1e-9)
        # the angle recomputed with numpy alone
        G = code.W.T @ code.W
        assert np.degrees(np.arccos(G[~np.eye(K, dtype=bool)].max())) == pytest.approx(
            code.min_angle_deg, abs=1e-9
        )
        # a closed form where a proof gives one (the icosahedron, the snub cube), none at K = 14
        assert (str(code.status) == "optimal") == (K != 14)
    rho, _ = gnc_jax.theory.softmax_code_closed_form(5, 6)  # the simplex (Theorem 3.3)
    code = gnc_jax.known_code("softmax-code", 5, 6)
    assert code.rho_one_vs_rest == pytest.approx(rho, abs=1e-12) and str(code.status) == "optimal"


@pytest.mark.slow
def test_every_shipped_code_certifies_at_its_rows_value():
    # The table's numbers are those of its configurations: 16 rows spread over d, K and both
    # problems, certified again from the arrays (known_code refuses damaged data).
    rows = list(known.table_rows().values())
    assert len(rows) >= 1000 and {r["problem"] for r in rows} == {"tammes", "softmax-code"}
    for r in rows[:: len(rows) // 16]:
        code = gnc_jax.known_code(r["problem"], r["d"], r["K"])
        col = store.SCORE[r["problem"]][0]
        assert getattr(code, col) == pytest.approx(r[col], rel=1e-12, abs=1e-12), (r["d"], r["K"])
        assert code.certificate_gap <= 1e-12


def test_a_code_at_a_proof_found_after_it_was_stored_is_optimal(monkeypatch):
    # The 5-demicube (Levenshtein's bound, cos 1/5) stored as 'stationary', as the table held it
    # before the closed form: on load it is 'optimal', its residual the gap; the softmax code of the
    # pair has no proof and keeps the table's word.
    row = known.table_rows()[("tammes", 5, 16)]
    monkeypatch.setitem(
        known.table_rows(), ("tammes", 5, 16), row | {"status": "stationary", "residual": -1.0}
    )
    code = gnc_jax.known_code("tammes", 5, 16)
    assert str(code.status) == "optimal" and 0 <= code.residual <= 1e-12
    assert code.max_cos == pytest.approx(0.2, abs=1e-12)
    assert (
        str(gnc_jax.known_code("softmax-code", 5, 16).status)
        == known.table_rows()[("softmax-code", 5, 16)]["status"]
        != "optimal"
    )


def test_damaged_data_and_unknown_pairs_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="problem"):
        gnc_jax.known_code("hardmax", 3, 12)
    with pytest.raises(ValueError, match="K"):
        gnc_jax.known_code("tammes", 3, 1)
    with pytest.raises(ValueError, match="no tammes code for d=3, K=1000"):
        gnc_jax.known_code("tammes", 3, 1000)
    row = known.table_rows()[("tammes", 3, 12)]
    monkeypatch.setitem(known.table_rows(), ("tammes", 3, 12), row | {"min_angle_deg": 64.0})
    with pytest.raises(RuntimeError, match="damaged"):
        gnc_jax.known_code("tammes", 3, 12)


def test_the_table_command_reads_the_shipped_table():
    r = run_cli("table", "--problem", "tammes", "--d", "3", "--K", "24", "--best", "--format", "json")
    assert r.returncode == 0, r.stderr
    (row,) = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    assert row["min_angle_deg"] == pytest.approx(gnc_jax.known_code("tammes", 3, 24).min_angle_deg, abs=1e-12)


def test_no_shipped_code_is_below_the_code_of_one_point_more():
    # A code of K + 1 points less a point is a code of K points at least as good on both problems:
    # the removal drops only that point's chords and shrinks the hull of every other point's rivals
    # (checked here on one code). So the best codes fall with K, and a shipped code below the next
    # one is not the best we have (benchmarks/monotone.py makes a better one from the next).
    rows = known.table_rows()
    breaks = []
    for (problem, d, K), r in rows.items():
        col = store.SCORE[problem][0]
        larger = rows.get((problem, d, K + 1))
        if larger is not None and r[col] < larger[col] - 1e-9:
            breaks.append((problem, d, K, r[col], larger[col]))
    assert not breaks
    W = gnc_jax.known_code("softmax-code", 4, 25).W
    G = W.T @ W - 2 * np.eye(25)
    margin = gnc_jax.one_vs_rest_distances(W).min()
    for i in (0, 12, 24):
        V = np.delete(W, i, axis=1)
        assert np.delete(np.delete(G, i, 0), i, 1).max() <= G.max()
        assert gnc_jax.one_vs_rest_distances(V).min() >= margin - 1e-12
