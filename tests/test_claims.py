"""The README's headline numbers are those of the committed outputs (benchmarks/check_claims.py)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[1]
spec = importlib.util.spec_from_file_location("check_claims", ROOT / "benchmarks" / "check_claims.py")
check_claims = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_claims)


def test_every_headline_claim_matches_the_committed_outputs(capsys):
    assert check_claims.main([]) == 0, capsys.readouterr().err


def test_a_number_that_differs_from_its_output_is_caught(tmp_path, monkeypatch, capsys):
    # The README as it read before: the d = 512 interval rounded inward, which the output does not certify.
    readme = (ROOT / "README.md").read_text().replace("[0.94128, 0.94132]", "[0.94129, 0.94131]")
    (tmp_path / "README.md").write_text(readme)
    monkeypatch.setattr(check_claims, "ROOT", tmp_path)
    assert check_claims.main([]) == 1
    assert "scale_claim" in capsys.readouterr().err


def test_rounding_is_in_the_safe_direction():
    assert (check_claims.down(0.9412871184, 5), check_claims.up(0.9413101907, 5)) == ("0.94128", "0.94132")
    assert check_claims.up_sci(8.99e-15) == "9.0e-15" and check_claims.up_sci(9.01e-15) == "9.1e-15"


def test_the_saved_codes_are_the_files_certified_and_their_max_cos_holds():
    import hashlib
    import json

    import numpy as np

    codes = ROOT / "benchmarks" / "results" / "codes"
    certified = {row["file"]: row for row in json.loads((codes / "certified.json").read_text())}
    scale = {(r["d"], r["K"]): r for r in json.loads((codes.parent / "scale.json").read_text())["pairs"]}
    assert sorted(certified) == sorted(p.name for p in codes.glob("*.npy"))
    for name, row in certified.items():
        assert hashlib.sha256((codes / name).read_bytes()).hexdigest() == row["sha256"]
        if row["K"] <= 1000:  # max cos in plain NumPy, beside the certified value and the scale.json row
            W = np.load(codes / name).astype(np.float64)
            G = W.T @ W / np.outer(np.linalg.norm(W, axis=0), np.linalg.norm(W, axis=0))
            np.fill_diagonal(G, -np.inf)
            assert abs(G.max() - row["max_cos"]) < 1e-14
            problem = name.split("_d")[0].replace("_", "-")
            assert scale[(row["d"], row["K"])][problem]["max_cos"] == row["max_cos"]
