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
