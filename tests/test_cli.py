"""End-to-end CLI: output formats, saved files, and one-line errors with exit status 2."""

import contextlib
import io
import json
import subprocess
import sys
import types

import numpy as np
import pytest

import gnc_jax
from gnc_jax import SolverSettings
from gnc_jax._src.cli import UsageError, main, parse_int_spec

FAST = ["--restarts", "4", "--steps", "600", "--hop-rounds", "1"]


def run_cli(*args):
    """The CLI in this process (compiled solvers are shared with the other tests); the subprocess
    test below checks the real entry point."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:  # argparse's own exits
            code = e.code
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def test_parse_int_spec():
    assert parse_int_spec("4:7,24", "K") == [4, 5, 6, 24]
    assert parse_int_spec("5", "d") == [5]
    assert parse_int_spec("3,3,2", "d") == [2, 3]


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "empty"),
        ("5:3", "empty range"),
        ("a", "not an integer"),
        ("2.5", "not an integer"),
        ("1", ">= 2"),
        ("3:", "not an integer"),
    ],
)
def test_parse_int_spec_errors(text, match):
    with pytest.raises(UsageError, match=match):
        parse_int_spec(text, "K")


@pytest.mark.slow
def test_a_searched_pair_says_what_stopped_its_search():
    # K = 16 is searched; a round cap of 2 stops the search: the table's search column and the JSON
    # row say so (K = 6, below the search's min_K, has none: '-').
    search = ["--search-rounds", "2", "--search-population", "4", "--quiet", *FAST]
    out = run_cli("solve", "tammes", "--d", "3", "--K", "6,16", "--format", "json", *search)
    assert out.returncode == 0, out.stderr
    rows = {r["K"]: r for r in map(json.loads, out.stdout.strip().splitlines())}
    assert (rows[16]["search_stopped_by"], rows[16]["search_rounds"]) == ("rounds", 2)
    assert not any(k.startswith("search_") for k in rows[6])
    table = run_cli("solve", "tammes", "--d", "3", "--K", "6,16", *search).stdout.splitlines()
    column = table[0].split().index("search")
    assert [line.split()[column] for line in table[1:]] == ["-", "rounds"]


@pytest.mark.slow
def test_json_output_and_save(tmp_path):
    out = run_cli(
        "solve",
        "softmax-code",
        "--d",
        "2,3",
        "--K",
        "4:6",
        "--format",
        "json",
        "--save",
        str(tmp_path),
        *FAST,
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.strip().splitlines()]
    assert [(r["d"], r["K"]) for r in rows] == [(2, 4), (2, 5), (3, 4), (3, 5)]
    for r in rows:
        for key in (
            "d",
            "K",
            "min_angle_deg",
            "max_cos",
            "rho_one_vs_rest",
            "n_rattlers",
            "certificate_gap",
            "restarts",
            "wall_s",
        ):
            assert key in r
        W = np.load(tmp_path / f"softmax-code_d{r['d']}_K{r['K']}.npy")
        assert W.shape == (r["d"], r["K"]) and W.dtype == np.float64
        # The printed margin is the exact margin of the saved configuration.
        assert gnc_jax.softmax_code_margin(W) == pytest.approx(r["rho_one_vs_rest"], abs=1e-12)


@pytest.mark.slow
def test_table_output():
    out = run_cli("solve", "tammes", "--d", "3", "--K", "6", *FAST)
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.strip().splitlines()
    assert header.split()[:3] == ["d", "K", "min_angle_deg"]
    assert abs(float(row.split()[2]) - 90.0) < 1e-6


@pytest.mark.parametrize(
    "args,match",
    [
        (["solve", "tammes", "--d", "1", "--K", "5"], "--d values must be >= 2"),
        (["solve", "tammes", "--d", "3", "--K", "1"], "--K values must be >= 2"),
        (["solve", "tammes", "--d", "3", "--K", "2.5"], "--K"),
        (["solve", "tammes", "--d", "3", "--K", "9:4"], "empty range"),
        (["solve", "tammes", "--d", "3", "--K", ""], "--K is empty"),
        (["solve", "tammes", "--d", "3", "--K", "5", "--restarts", "0"], "--restarts must be >= 1"),
        (["solve", "tammes", "--d", "3", "--K", "5", "--seed", "x"], "--seed"),
        (["solve", "packing", "--d", "3", "--K", "5"], "invalid choice"),
        (["solve", "tammes", "--d", "3"], "--K"),
        (["solve", "tammes", "--d", "3", "--K", "5", "--format", "xml"], "invalid choice"),
        (["solve", "tammes", "--d", "3", "--K", "5", "--save", "/proc/nope"], "cannot create directory"),
        (["solve", "ufm", "--d", "3", "--K", "4", "--tau", "0"], "--tau values must be finite and > 0"),
        (["solve", "ufm", "--d", "3", "--K", "4", "--tau", "0.1,nan"], "--tau values must be finite"),
        (["solve", "ufm", "--d", "3", "--K", "4"], "needs --tau"),
        (["solve", "ufm", "--d", "3", "--K", "4", "--tau", "1", "--n", "0"], "--n values must be >= 1"),
        (["solve", "ufm", "--d", "3", "--K", "4", "--tau", "1", "--weight-decay", "-1"], "--weight-decay"),
        (["solve", "ufm", "--d", "3", "--K", "4", "--tau", "1", "--hop-rounds", "2"], "--hop-rounds"),
        (["solve", "hardmax", "--d", "3", "--K", "4", "--tau", "1"], "--tau does not apply to hardmax"),
        (["solve", "tammes", "--d", "3", "--K", "4", "--n", "2"], "--n does not apply to tammes"),
        (["solve", "tammes", "--d", "3", "--K", "16", "--time-limit", "0"], "--time-limit must be"),
        (["solve", "tammes", "--d", "3", "--K", "16", "--time-limit", "nan"], "--time-limit must be"),
        (["solve", "tammes", "--d", "3", "--K", "16", "--search-population", "0"], "--search-population"),
        (["sweep", "tammes", "--d", "3", "--K", "16", "--search-stack", "0"], "--search-stack"),
        (
            ["solve", "tammes", "--d", "3", "--K", "16", "--search-rotate-share", "1.5"],
            "--search-rotate-share",
        ),
        (
            ["solve", "tammes", "--d", "3", "--K", "16", "--search-rotate-share", "nan"],
            "--search-rotate-share",
        ),
        (
            ["solve", "tammes", "--d", "3", "--K", "16", "--search-work-per-member", "0"],
            "--search-work-per-member",
        ),
        (
            ["solve", "ufm", "--d", "3", "--K", "4", "--tau", "1", "--search-work-per-member", "9"],
            "--search-work-per-member does not apply to ufm",
        ),
        (
            ["solve", "hardmax", "--d", "3", "--K", "4", "--time-limit", "5"],
            "applies to tammes, softmax-code",
        ),
        (
            ["sweep", "ufm", "--d", "3", "--K", "4", "--tau", "1", "--out", "x.csv", "--search-rounds", "3"],
            "--search-rounds does not apply to ufm",
        ),
        (["frobnicate"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_input_one_line_exit_2(args, match, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("gnc-jax: error:")
    assert match in err


@pytest.mark.slow
def test_ufm_and_hardmax_json_and_save(tmp_path):
    out = run_cli(
        "solve",
        "ufm",
        "--d",
        "3",
        "--K",
        "4",
        "--n",
        "2",
        "--tau",
        "0.5,0.05",
        "--restarts",
        "2",
        "--steps",
        "400",
        "--format",
        "json",
        "--save",
        str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["tau"] for r in rows] == [0.5, 0.05]
    for r in rows:
        assert {"loss", "gnc1", "gnc2", "gnc3", "max_cos", "status"} <= set(r)
        # K = 4 <= d + 1: the UFM classifier is the simplex ETF, rho = K / (K - 1) (Theorem 3.3).
        assert abs(r["gnc2"] - 4 / 3) < 1e-6 and r["gnc1"] < 1e-9
        W = np.load(tmp_path / f"ufm_d3_K4_n2_tau{r['tau']:g}_W.npy")
        H = np.load(tmp_path / f"ufm_d3_K4_n2_tau{r['tau']:g}_H.npy")
        assert W.shape == (3, 4) and H.shape == (3, 8) and W.dtype == np.float64
        np.testing.assert_allclose(gnc_jax.max_cos(W), r["max_cos"], rtol=1e-12)
    out = run_cli(
        "solve",
        "hardmax",
        "--d",
        "2",
        "--K",
        "5",
        "--n",
        "2",
        "--restarts",
        "4",
        "--format",
        "json",
        "--save",
        str(tmp_path),
    )
    assert out.returncode == 0, out.stderr
    (row,) = [json.loads(line) for line in out.stdout.splitlines()]
    assert abs(row["gnc2"] - (1 - np.cos(2 * np.pi / 5))) < 1e-9 and abs(row["loss"] + row["gnc2"]) < 1e-9
    assert np.load(tmp_path / "hardmax_d2_K5_n2_H.npy").shape == (2, 10)


@pytest.mark.parametrize(
    "error", [ValueError("shapes (3,4) and (5,) not aligned"), RuntimeError("LP failed")]
)
def test_failure_inside_the_computation_exits_1_and_debug_shows_it(error, monkeypatch, capsys):
    # A ValueError raised inside the computation (numpy, scipy) is not a usage error: exit 1, one
    # line; --debug (or GNC_JAX_DEBUG=1) lets the exception and its traceback through.
    import gnc_jax

    def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(gnc_jax, "solve", broken)
    argv = ["solve", "tammes", "--d", "3", "--K", "5"]
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("gnc-jax: failed: ") and str(error) in err[-1] and "--debug" in err[-1]
    assert not any("Traceback" in line for line in err)
    with pytest.raises(type(error)):
        main(["--debug", *argv])
    monkeypatch.setenv("GNC_JAX_DEBUG", "1")
    with pytest.raises(type(error)):
        main(argv)


def test_bad_input_subprocess_has_no_traceback():
    out = subprocess.run(
        [sys.executable, "-m", "gnc_jax", "solve", "tammes", "--d", "0:1", "--K", "5"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_demo_writes_csv_and_picture(tmp_path):
    from gnc_jax._src import demo

    rows = demo.run(
        str(tmp_path), ds=(2, 3), Ks=(3, 4, 7), solver=SolverSettings(restarts=4, steps=600, hop_rounds=1)
    )
    assert (tmp_path / "results.csv").read_text().startswith("d,K,")
    assert (tmp_path / "codes.png").stat().st_size > 1000
    for r in rows:
        if r["rho_closed_form"] is not None:  # Theorem 3.3 cases
            assert abs(r["rho_softmax_code"] - r["rho_closed_form"]) < 1e-6


@pytest.mark.slow
def test_time_limit_prints_progress_and_returns_a_certified_code():
    r = run_cli(
        "solve",
        "tammes",
        "--d",
        "3",
        "--K",
        "16",
        "--search-population",
        "4",
        "--time-limit",
        "2",
        "--format",
        "json",
    )
    assert r.returncode == 0
    row = json.loads(r.stdout.strip().splitlines()[-1])
    progress = [line for line in r.stderr.splitlines() if line.startswith("search tammes d=3 K=16: best")]
    assert progress  # at least the final line, with the best angle so far
    best = float(progress[-1].split("best ")[1].split(" deg")[0])
    assert row["min_angle_deg"] >= best - 1e-9 and row["restarts"] == 4


def test_every_search_option_reaches_the_search_settings():
    # Through the command's own path (the options it collects, then the settings): each --search-*
    # flag of `solve` sets its SearchSettings field to the value given, none is dropped (a flag that
    # parsed but never reached the search would change nothing, silently), and a value equal to a
    # falsy 0 is kept.
    from gnc_jax._src.cli import _solver_options, build_parser, settings_from_options

    given = {"rounds": 3, "work_per_member": 100, "population": 8, "stack": 2, "rotate_share": 0.0}
    parser = build_parser()
    solve = next(a for a in parser._actions if a.dest == "command").choices["solve"]  # as in test_registry
    flags = {o for a in solve._actions for o in a.option_strings if o.startswith("--search-")}
    assert flags == {"--search-" + k.replace("_", "-") for k in given}
    argv = ["solve", "tammes", "--d", "3", "--K", "16"]
    for k, v in given.items():
        argv += ["--search-" + k.replace("_", "-"), str(v)]
    search = settings_from_options("tammes", _solver_options(parser.parse_args(argv)))["search"]
    assert search == gnc_jax.SearchSettings(**given)
    assert all(getattr(gnc_jax.SearchSettings(), k) != v for k, v in given.items())
