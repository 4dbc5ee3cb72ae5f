"""`gnc-jax`: a thin command-line layer over the API.

Exit status 0 on success, 2 on bad arguments (one line on stderr, before any computation), 1 on a failure
inside the computation (one line; `--debug` or GNC_JAX_DEBUG=1 shows the traceback).
Results go to stdout (``--format table`` or ``json`` lines), progress to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import sys

from gnc_jax._src import registry
from gnc_jax._src.errors import InvalidArgument

USAGE_ERROR, INTERNAL_ERROR = 2, 1


class UsageError(Exception):
    """Bad input from the command line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the usage too)
        raise UsageError(message)


def parse_int_spec(text: str, name: str, minimum: int = 2) -> list[int]:
    """Parse '5', '3,4,7', '4:15' (end exclusive) or mixes like '4:15,24' into sorted unique ints."""
    if text is None or not text.strip():
        raise UsageError(f"--{name} is empty")
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if ":" in part:
                a, b = part.split(":")
                lo, hi = int(a), int(b)
                if hi <= lo:
                    raise UsageError(f"--{name}: empty range {part!r} (A:B needs B > A; B is exclusive)")
                out.extend(range(lo, hi))
            else:
                out.append(int(part))
        except ValueError:
            raise UsageError(f"--{name}: {part!r} is not an integer or a range A:B") from None
    bad = [v for v in out if v < minimum]
    if bad:
        raise UsageError(f"--{name} values must be >= {minimum}, got {bad[0]}")
    return sorted(set(out))


def parse_float_list(text: str, name: str, allow_zero: bool = False) -> list[float]:
    """Parse '0.1' or '1,0.5,0.2' into positive finite floats (in the given order)."""
    if text is None or not text.strip():
        raise UsageError(f"--{name} is empty")
    out = []
    for part in text.split(","):
        try:
            v = float(part)
        except ValueError:
            raise UsageError(f"--{name}: {part.strip()!r} is not a number") from None
        if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
            raise UsageError(
                f"--{name} values must be finite and {'>=' if allow_zero else '>'} 0, got {part.strip()}"
            )
        out.append(v)
    return out


def _int_at_least(name: str, lo: int):
    def conv(text):
        try:
            v = int(text)
        except ValueError:
            raise UsageError(f"--{name} must be an integer, got {text!r}") from None
        if v < lo:
            raise UsageError(f"--{name} must be >= {lo}, got {v}")
        return v

    return conv


def _number(name: str, valid, requirement: str):
    """An argparse type: a float that ``valid`` accepts, else a usage error naming --name."""

    def conv(text):
        try:
            v = float(text)
        except ValueError:
            raise UsageError(f"--{name} must be a number, got {text!r}") from None
        if not valid(v):
            raise UsageError(f"--{name} must be {requirement}, got {text}")
        return v

    return conv


def _positive_float(name: str):
    return _number(name, lambda v: math.isfinite(v) and v > 0, "a finite number > 0")


def _fraction(name: str):
    return _number(name, lambda v: 0 <= v <= 1, "in [0, 1]")


def _grid_arguments(parser, problems) -> None:
    """The problem and its grid of instances: shared by solve and sweep."""
    parser.add_argument("problem", choices=problems)
    parser.add_argument("--d", required=True, help="dimension(s): 5, 3,4, 2:9 (end exclusive), 4:15,24")
    parser.add_argument("--K", required=True, help="number(s) of points, same syntax")
    parser.add_argument("--n", help="features per class (hardmax, ufm): same syntax, >= 1")
    parser.add_argument("--tau", help="temperature(s) > 0 of the UFM, eq. (2): 0.1 or 1,0.5,0.2")
    parser.add_argument("--weight-decay", default=None, help="lambda >= 0 of the weight-decay UFM, eq. (B.1)")


def _solver_arguments(parser) -> None:
    """Restarts, seed, steps, hop rounds and the search's settings: shared by solve and sweep."""
    parser.add_argument(
        "--restarts",
        type=_int_at_least("restarts", 1),
        default=None,
        help="random starts per pair: the annealer's restarts and, unless --search-population is given, "
        "the global search's population (default: sized by the pair, 64 for small pairs, at least 8; "
        "the search: 16 per CPU core, or sized to an accelerator's memory)",
    )
    parser.add_argument("--seed", type=_int_at_least("seed", 0), default=0)
    parser.add_argument(
        "--steps", type=_int_at_least("steps", 1), default=None, help="main continuation steps"
    )
    parser.add_argument("--hop-rounds", type=_int_at_least("hop-rounds", 0), default=None)
    _search_arguments(parser)


def _search_arguments(parser) -> None:
    """The global search's options (tammes, softmax-code; see gnc_jax._src.search)."""
    parser.add_argument(
        "--search-rounds",
        type=_int_at_least("search-rounds", 0),
        default=None,
        help="tammes, softmax-code: rounds of the iterated hole search at most (0: off; default 1000, "
        "the work budget ends a default run first)",
    )
    parser.add_argument(
        "--search-work-per-member",
        type=_int_at_least("search-work-per-member", 1),
        default=None,
        help="the search's deterministic work budget in member-steps per member of the population and "
        "per sqrt(K) (default 4500; the same count on any machine: --time-limit bounds the wall clock)",
    )
    parser.add_argument(
        "--search-population",
        type=_int_at_least("search-population", 1),
        default=None,
        help="configurations the search moves in parallel (default: --restarts if given, else sized to "
        "the device: 16 per CPU core): the restart axis of searched pairs, what an accelerator buys",
    )
    parser.add_argument(
        "--search-stack",
        type=_int_at_least("search-stack", 1),
        default=None,
        help="pairs of one d searched at once in one compiled round, padded to their size bucket (8, 12, "
        "16, 24, 32, 48, ... points), a device-sized population divided among them (default 1: one "
        "pair at a time, unpadded)",
    )
    parser.add_argument(
        "--search-rotate-share",
        type=_fraction("search-rotate-share"),
        default=None,
        help="the share of the search's moves that rotate a cap of points about its centre "
        "instead of relocating points into holes (default 0.5; 0: relocations only)",
    )


# Options whose applicability the registry decides (gnc_jax._src.registry.Family.options).
_FAMILY_OPTIONS = ("n", "tau", "weight_decay", "counts", "lambda_w", "lambda_h", "time_limit")


def _check_applicable(args, options) -> None:
    """The one check of which options apply to the problem (from :mod:`gnc_jax._src.registry`)."""
    given = [o for o in _FAMILY_OPTIONS if getattr(args, o, None) is not None]
    given += [o for o in ("hop_rounds", *registry.SEARCH_SETTINGS) if o in options]
    try:
        registry.check_options(args.problem, given, spell=lambda o: "--" + o.replace("_", "-"))
    except InvalidArgument as e:
        raise UsageError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gnc-jax", description="Softmax codes, Tammes codes and generalized neural collapse."
    )
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of a failure (also GNC_JAX_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _solve_command(sub)
    _verify_network_command(sub)
    _rmt_command(sub)
    _class_means_command(sub)
    _gsl_command(sub)
    _sweep_command(sub)
    _table_command(sub)
    _plot_command(sub)
    _demo_command(sub)
    return parser


def _solve_command(sub) -> None:
    """``gnc-jax solve`` and its options."""
    solve = sub.add_parser("solve", help="solve an arrangement problem for every (d, K) of a grid")
    _grid_arguments(solve, registry.NAMES)
    solve.add_argument(
        "--counts",
        action="append",
        help="ufm-imbalanced: class sizes n1,n2,... (K integers >= 1); repeat for several profiles",
    )
    solve.add_argument("--lambda-w", help="ufm-imbalanced: weight decay(s) of W, > 0: 5e-3 or 1e-3,5e-3")
    solve.add_argument("--lambda-h", help="ufm-imbalanced: weight decay(s) of H, > 0")
    _solver_arguments(solve)
    solve.add_argument(
        "--time-limit",
        type=_positive_float("time-limit"),
        default=None,
        metavar="SECONDS",
        help="tammes, softmax-code: search each pair until this time is spent, keep the best so far",
    )
    solve.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    solve.add_argument("--dtype", choices=["float64", "float32"], default=None)
    solve.add_argument(
        "--save",
        metavar="DIR",
        help="write DIR/{problem}_d{d}_K{K}.npy (float64, (d, K)); hardmax and ufm: "
        "DIR/{problem}_d{d}_K{K}_n{n}[_tau{tau}]_W.npy and ..._H.npy (d, n K)",
    )
    solve.add_argument("--format", choices=["table", "json"], default="table")


def _verify_network_command(sub) -> None:
    """``gnc-jax verify-network`` and its options."""
    net = sub.add_parser("verify-network", help="train a network; GNC1-3 against the best found rho")
    net.add_argument("--dataset", choices=["digits", "gaussian"], default="digits")
    net.add_argument("--d", type=_int_at_least("d", 2), default=3, help="feature dimension")
    net.add_argument("--tau", default="0.1", help="temperature > 0")
    net.add_argument("--classes", type=_int_at_least("classes", 2), default=None, help="K (digits: <= 10)")
    net.add_argument("--epochs", type=_int_at_least("epochs", 1), default=200)
    net.add_argument("--classifier", choices=["learned", "cmf", "fixed"], default="learned")
    net.add_argument("--backbone", choices=["mlp", "resnet"], default="mlp")
    net.add_argument("--assignment", default=None, help="fixed classifier: code point of each class, 2,0,1,3")
    net.add_argument("--seed", type=_int_at_least("seed", 0), default=0)
    net.add_argument(
        "--tau-start", default=None, help="anneal the temperature from this value (first half of training)"
    )
    net.add_argument("--weight-decay", default="5e-4", help="L2 on every trained parameter (>= 0)")
    net.add_argument("--out", default="verify_out", help="folder for metrics.json and metrics.png")


def _rmt_command(sub) -> None:
    """``gnc-jax rmt`` and its options."""
    rmt = sub.add_parser(
        "rmt", help="binary softmax classifier: Theorem 4.8's predicted accuracy against training (paper 003)"
    )
    rmt.add_argument("--p", required=True, help="dimension(s): 50 or 50,100,200 or 50:400")
    rmt.add_argument("--n", type=_int_at_least("n", 2), default=400, help="training samples")
    rmt.add_argument("--lam", default="20", help="regularisation lambda > 0")
    rmt.add_argument("--proportion", default="0.3333333333333333", help="gamma_1 in (0, 1)")
    rmt.add_argument("--mean-norm", default="0.5", help="||mu_1|| = ||mu_2||, mu_1 orthogonal to mu_2")
    rmt.add_argument("--seeds", type=_int_at_least("seeds", 0), default=10, help="empirical runs (0: none)")


def _class_means_command(sub) -> None:
    """``gnc-jax class-means`` and its options."""
    cmeans = sub.add_parser(
        "class-means", help="softmax weights against centred class means on NOR data (paper 000)"
    )
    cmeans.add_argument("--p", default="16,64,256", help="dimension(s); n = 2 p samples")
    cmeans.add_argument("--K", type=_int_at_least("K", 2), default=4)
    cmeans.add_argument("--lam", default="1e-2", help="l2 weight > 0")
    cmeans.add_argument("--steps", type=_int_at_least("steps", 1), default=2000)
    cmeans.add_argument("--seeds", type=_int_at_least("seeds", 1), default=3, help="random starts compared")


def _gsl_command(sub) -> None:
    """``gnc-jax gsl`` and its options."""
    gsl = sub.add_parser("gsl", help="generalized softmax learning near independence (paper 004)")
    gsl.add_argument("--nx", type=_int_at_least("nx", 2), default=20)
    gsl.add_argument("--ny", type=_int_at_least("ny", 2), default=8)
    gsl.add_argument("--k", type=_int_at_least("k", 1), default=2)
    gsl.add_argument("--epsilon", default="1e-3", help="distance from independence, in (0, 1]")
    gsl.add_argument("--seed", type=_int_at_least("seed", 0), default=0)


def _sweep_command(sub) -> None:
    """``gnc-jax sweep`` and its options."""
    sw = sub.add_parser("sweep", help="solve a grid into a resumable results store (CSV)")
    _grid_arguments(sw, registry.STORED)
    sw.add_argument("--out", required=True, help="the store (CSV); configurations go to <stem>_configs/")
    _solver_arguments(sw)
    sw.add_argument("--dtype", choices=["float64", "float32"], default=None)
    sw.add_argument(
        "--batch",
        type=_int_at_least("batch", 1),
        default=None,
        help="instances per solver call (1 on CPU, else 32; at least --search-stack)",
    )
    sw.add_argument(
        "--workers", type=_int_at_least("workers", 1), default=2, help="batches in flight at once (threads)"
    )
    sw.add_argument(
        "--distributed", action="store_true", help="jax.distributed.initialize(); one store shard per process"
    )
    sw.add_argument("--coordinator", default=None, help="--distributed: host:port of process 0")
    sw.add_argument("--process-index", type=_int_at_least("process-index", 0), default=None)
    sw.add_argument("--process-count", type=_int_at_least("process-count", 1), default=None)
    sw.add_argument(
        "--neighbours",
        action="store_true",
        help="tammes: then solve again each pair below a code made from its neighbours' (K - 1, K + 1)",
    )
    sw.add_argument("--quiet", action="store_true", help="no progress lines")


def _table_command(sub) -> None:
    """``gnc-jax table`` and its options."""
    tb = sub.add_parser("table", help="query results stores: filter, sort, best per (d, K), compare runs")
    tb.add_argument(
        "files",
        nargs="*",
        help="store(s); shards and runs are read together (default: the table of codes shipped with gnc_jax)",
    )
    tb.add_argument("--problem", choices=registry.STORED)
    tb.add_argument("--d", help="keep these d (same syntax as sweep)")
    tb.add_argument("--K", help="keep these K")
    tb.add_argument("--best", action="store_true", help="the best row per instance (problem, d, K, n, tau)")
    tb.add_argument("--sort", default=None, help="column to sort by (default: problem, d, K, n, tau)")
    tb.add_argument("--descending", action="store_true")
    tb.add_argument("--compare", nargs="+", metavar="FILE", help="another run: best rows side by side")
    tb.add_argument("--columns", default=None, help="comma-separated columns to show")
    tb.add_argument("--format", choices=["table", "csv", "json"], default="table")


def _plot_command(sub) -> None:
    """``gnc-jax plot`` and its options."""
    pl = sub.add_parser("plot", help="pictures of results stores (margins, bounds, configurations)")
    pl.add_argument("files", nargs="+")
    pl.add_argument("--out", default="plots", help="folder for the PNG files")
    pl.add_argument(
        "--html", action="store_true", help="also an interactive 3-D view (plotly) of every d = 3 code drawn"
    )


def _demo_command(sub) -> None:
    """``gnc-jax demo`` and its options."""
    demo = sub.add_parser("demo", help="solve a small grid, compare with closed forms and bounds, plot")
    demo.add_argument("--out", default="demo_out", help="folder for results.csv and codes.png")
    demo.add_argument("--seed", type=_int_at_least("seed", 0), default=0)


def _prepare_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create directory {path!r}: {e.strerror}") from None
    if not os.access(path, os.W_OK):
        raise UsageError(f"directory {path!r} is not writable")


SOLVE_COLUMNS = [  # name, format spec ('' for str(); None prints as '-')
    ("d", "d"),
    ("K", "d"),
    ("min_angle_deg", ".10f"),
    ("max_cos", ".12f"),
    ("rho_one_vs_rest", ".12f"),
    ("rho_lower", ".12f"),
    ("closed_form", ".12f"),
    ("n_rattlers", "d"),
    ("certificate_gap", ".1e"),
    ("status", ""),
    ("search", ""),  # what stopped the pair's global search ('-': none ran)
    ("hits", ""),
    ("wall_s", ".2f"),
]
FEATURE_COLUMNS = [  # hardmax and ufm
    ("d", "d"),
    ("K", "d"),
    ("n", "d"),
    ("tau", "g"),
    ("loss", ".4e"),
    ("gnc1", ".2e"),
    ("gnc2", ".10f"),
    ("gnc3", ".2e"),
    ("max_cos", ".10f"),
    ("status", ""),
    ("wall_s", ".2f"),
]


def _row(sol) -> dict:
    from gnc_jax._src import theory

    row = sol.summary()
    if sol.problem == "softmax-code":
        cf = theory.softmax_code_closed_form(sol.d, sol.K)
        row["closed_form"] = None if cf is None else cf[0]
    else:
        row["closed_form"] = theory.tammes_closed_form(sol.d, sol.K)
    return row


def _cell(v, spec: str = "") -> str:
    if v is None:
        return "-"
    if spec:
        return format(v, spec)
    if isinstance(v, float):
        return f"{v:.12g}" if abs(v) >= 1e-3 or v == 0 else f"{v:.3e}"
    return str(v)


def print_rows(rows, columns, fmt: str = "table", file=None) -> None:
    """The one table printer: ``columns`` are names or (name, format spec) pairs; ``fmt`` is
    'table' (right-aligned, as wide as the widest cell), 'csv' or 'json' (one object a line)."""
    import csv

    columns = [(c, "") if isinstance(c, str) else c for c in columns]
    names = [name for name, _ in columns]
    if fmt == "json":
        for r in rows:
            print(json.dumps({c: r.get(c) for c in names}), file=file)
        return
    if fmt == "csv":
        w = csv.writer(file or sys.stdout, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow(["" if r.get(c) is None else r.get(c) for c in names])
        return
    cells = [[_cell(r.get(c), spec) for c, spec in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(names)]
    print(" ".join(c.rjust(w) for c, w in zip(names, widths)), file=file)
    for row in cells:
        print(" ".join(v.rjust(w) for v, w in zip(row, widths)), file=file)


def _feature_options(args) -> tuple[list[int], list[float] | None, float]:
    """--n, --tau and --weight-decay parsed (their applicability is checked already)."""
    ns = parse_int_spec(args.n, "n", minimum=1) if args.n is not None else [1]
    taus = parse_float_list(args.tau, "tau") if args.tau is not None else None
    lam = 0.0 if args.weight_decay is None else parse_float_list(args.weight_decay, "weight-decay", True)[0]
    return ns, taus, lam


def _feature_rows(args, ds, Ks, ns, taus, lam, settings):
    """HardMax (eq. 5) and UFM (eq. 2 / B.1) solutions with their rows and file stems."""
    import gnc_jax

    progress = None if args.quiet else sys.stderr
    if args.problem == "hardmax":
        sols = [
            s
            for n in ns
            for s in gnc_jax.solve("hardmax", ds, Ks, n=n, seed=args.seed, progress=progress, **settings)
        ]
        return [(s, s.summary() | {"tau": None}, f"hardmax_d{s.d}_K{s.K}_n{s.n}") for s in sols]
    sols = gnc_jax.solve_ufm(
        ds, Ks, ns, taus, weight_decay=lam, seed=args.seed, progress=progress, **settings
    )
    return [(s, s.summary(), f"ufm_d{s.d}_K{s.K}_n{s.n}_tau{s.tau:g}") for s in sols]


def _single_int(text: str, name: str, minimum: int) -> int:
    values = parse_int_spec(text, name, minimum)
    if len(values) != 1:
        raise UsageError(f"--{name} takes one value for this problem, got {text!r}")
    return values[0]


def cmd_solve_imbalanced(args, options) -> int:
    """`solve ufm-imbalanced`: solver values beside the closed form, per instance and per class."""
    import numpy as np

    from gnc_jax.related.imbalanced import solve_ufm_imbalanced

    d, K = _single_int(args.d, "d", 2), _single_int(args.K, "K", 2)
    profiles = []
    for text in args.counts:
        c = parse_int_spec_ordered(text, "counts")
        if len(c) != K:
            raise UsageError(f"--counts {text!r} has {len(c)} class sizes but --K is {K}")
        if min(c) < 1:
            raise UsageError(f"--counts values must be >= 1, got {text!r}")
        profiles.append(c)
    lws, lhs = parse_float_list(args.lambda_w, "lambda-w"), parse_float_list(args.lambda_h, "lambda-h")
    if args.save:
        _prepare_dir(args.save)
    if "steps" in options:  # --steps N: N continuation steps and N at the full regularisers
        options = options | {"hold_steps": options["steps"]}
    settings = settings_from_options("ufm-imbalanced", options)
    print(
        f"gnc-jax: solving ufm-imbalanced for {len(profiles) * len(lws) * len(lhs)} instance(s)...",
        file=sys.stderr,
    )
    sols = solve_ufm_imbalanced(profiles, d, lws, lhs, seed=args.seed, **settings)
    for s in sols:
        row = s.summary()
        if args.format == "json":
            print(json.dumps(row))
        else:
            print_imbalanced(row)
        if args.save:
            stem = (
                f"ufm-imbalanced_d{d}_K{K}_n{'-'.join(map(str, s.counts))}_lw{s.lambda_w:g}_lh{s.lambda_h:g}"
            )
            np.save(os.path.join(args.save, f"{stem}_W.npy"), s.W.astype(np.float64))
            np.save(os.path.join(args.save, f"{stem}_H.npy"), s.H.astype(np.float64))
    return 0


def print_imbalanced(row: dict, file=None) -> None:
    """One instance: certificate line, then solver and closed form per class."""
    print(
        f"d={row['d']} K={row['K']} counts={','.join(map(str, row['counts']))} lambda_w={row['lambda_w']:g} "
        f"lambda_h={row['lambda_h']:g}: loss {row['loss']:.12f}  bound {row['lower_bound']:.12f}  "
        f"gap {row['optimality_gap']:.1e}  kkt {row['kkt_residual']:.1e}  {row['status']} "
        f"({row['restarts_at_optimum']}/{row['restarts']} restarts)  "
        f"threshold n* = {row['collapse_threshold']:.4g}",
        file=file,
    )
    print(
        f"  nc1 {row['nc1']:.1e}  orthogonality {row['orthogonality']:.1e}  "
        f"alignment {row['alignment_error']:.1e}  norm error {row['norm_error']:.1e}  "
        f"angle error {row['angle_error_deg']:.1e} deg",
        file=file,
    )
    print(
        f"  {'class':>5} {'n':>7} {'|mean h|':>12} {'theory':>12} {'|w|':>12} {'theory':>12} collapsed",
        file=file,
    )
    for k, n in enumerate(row["counts"]):
        flag = "yes" if row["collapsed"][k] else "no"
        theory = "yes" if row["predicted_collapsed"][k] else "no"
        print(
            f"  {k:>5} {n:>7} {row['feature_norms'][k]:>12.8f} {row['predicted_feature_norms'][k]:>12.8f} "
            f"{row['classifier_norms'][k]:>12.8f} {row['predicted_classifier_norms'][k]:>12.8f} "
            f"{flag}/{theory}",
            file=file,
        )


def _solver_options(args) -> dict:
    """The solver settings given on the command line (--restarts, --steps, --hop-rounds, --dtype,
    --search-*)."""
    names = ("restarts", "steps", "hop_rounds", "dtype", *registry.SEARCH_SETTINGS)
    return {k: getattr(args, k) for k in names if getattr(args, k) is not None}


def settings_from_options(problem: str, options: dict) -> dict:
    """The settings objects of the command line's solver options, as keywords of the problem's
    solver: ``solver`` (the family's settings type) and, where the family takes the search options,
    ``search``. ``search_<field>`` sets the search's field and the others the solver's; ``restarts``
    also sets the search's population unless ``search_population`` is given (one restart axis,
    whichever solver a pair gets). Bad values are refused by name.

    >>> settings_from_options("tammes", {"restarts": 8, "search_rounds": 0})["search"].population
    8
    """
    from gnc_jax._src.search import SearchSettings

    family = registry.family(problem)
    search = {k.removeprefix("search_"): v for k, v in options.items() if k.startswith("search_")}
    solver = {k: v for k, v in options.items() if not k.startswith("search_")}
    settings = {"solver": family.settings_type()(**solver)}
    if family.takes_search:
        if (solver.get("restarts") or 0) > 0:
            search.setdefault("population", solver["restarts"])
        settings["search"] = SearchSettings(**search)
    return settings


def cmd_solve(args) -> int:
    import numpy as np

    import gnc_jax

    options = _solver_options(args)
    _check_applicable(args, options)
    if args.problem == "ufm-imbalanced":
        return cmd_solve_imbalanced(args, options)
    settings = settings_from_options(args.problem, options)
    ds = parse_int_spec(args.d, "d")
    Ks = parse_int_spec(args.K, "K")
    if args.save:
        _prepare_dir(args.save)
    ns, taus, lam = _feature_options(args)
    print(f"gnc-jax: solving {args.problem} for {len(ds) * len(Ks)} (d, K) pair(s)...", file=sys.stderr)
    if args.problem in ("hardmax", "ufm"):
        results = _feature_rows(args, ds, Ks, ns, taus, lam, settings)
        if args.format == "json":
            _print_json_lines(row for _, row, _ in results)
        else:
            print_rows([row for _, row, _ in results], FEATURE_COLUMNS)
        if args.save:
            for s, _, stem in results:
                np.save(os.path.join(args.save, f"{stem}_W.npy"), np.asarray(s.W, np.float64))
                np.save(os.path.join(args.save, f"{stem}_H.npy"), np.asarray(s.H, np.float64))
        return 0
    sols = gnc_jax.solve(
        args.problem,
        ds,
        Ks,
        seed=args.seed,
        time_limit=args.time_limit,
        progress=None if args.quiet else sys.stderr,
        release_memory=True,
        **settings,
    )
    rows = [_row(s) for s in sols]
    if args.format == "json":
        _print_json_lines(rows)
    else:
        shown = [{"hits": f"{r['hits']}/{r['restarts']}", "search": r.get("search_stopped_by")} for r in rows]
        print_rows([r | extra for r, extra in zip(rows, shown)], SOLVE_COLUMNS)
    if args.save:
        for s in sols:
            np.save(os.path.join(args.save, f"{s.problem}_d{s.d}_K{s.K}.npy"), s.W.astype(np.float64))
    return 0


def cmd_verify_network(args) -> int:
    from gnc_jax.nn.train import TrainSettings
    from gnc_jax.nn.verify import check_assignment, verify_network

    tau = _single_float(args.tau, "tau")
    settings = TrainSettings(
        tau_start=None if args.tau_start is None else _single_float(args.tau_start, "tau-start"),
        weight_decay=_single_float(args.weight_decay, "weight-decay", allow_zero=True),
    )
    assignment = None
    if args.assignment is not None:
        if args.classifier != "fixed":
            raise UsageError("--assignment applies to --classifier fixed only")
        assignment = parse_int_spec_ordered(args.assignment, "assignment")
        check_assignment(assignment, 10 if args.classes is None else args.classes)  # both datasets: 10
    _prepare_dir(args.out)
    res = verify_network(
        args.dataset,
        args.d,
        tau,
        args.classes,
        args.epochs,
        args.classifier,
        args.backbone,
        assignment,
        args.seed,
        args.out,
        settings,
    )
    status = {k: res[k] for k in ("status", "status_note")}
    print(json.dumps({"out": args.out, "rho_hat": res["rho_hat"]} | res["final"] | status))
    return 0


def _single_float(text: str, name: str, allow_zero: bool = False) -> float:
    values = parse_float_list(text, name, allow_zero)
    if len(values) != 1:
        raise UsageError(f"--{name} takes one value, got {text!r}")
    return values[0]


def parse_int_spec_ordered(text: str, name: str) -> list[int]:
    """Comma-separated integers >= 0, order kept."""
    try:
        return [int(p) for p in text.split(",")]
    except ValueError:
        raise UsageError(f"--{name} must be comma-separated integers, got {text!r}") from None


def _print_json_lines(rows) -> int:
    for row in rows:
        print(json.dumps(row), flush=True)
    return 0


def cmd_rmt(args) -> int:
    """One JSON line per p: Theorem 4.8's (delta, m, sigma) and accuracies beside trained ones."""
    from gnc_jax.related import rmt

    ps = parse_int_spec(args.p, "p", minimum=2)
    lam, g1 = _single_float(args.lam, "lam"), _single_float(args.proportion, "proportion")
    norm = _single_float(args.mean_norm, "mean-norm")
    return _print_json_lines(rmt.figure2_rows(ps, args.n, lam, g1, norm, args.seeds))


def cmd_class_means(args) -> int:
    """One JSON line per p: cosine of learned weights to centred means, steps to a target loss from
    the class-mean initialisation and from random starts of the same norm."""
    from gnc_jax.related import class_means

    ps = parse_int_spec(args.p, "p", minimum=2)
    lam = _single_float(args.lam, "lam")
    return _print_json_lines(class_means.alignment_rows(ps, args.K, lam, args.steps, args.seeds))


def cmd_gsl(args) -> int:
    """One JSON line per model: divergence, Pythagorean residual, stationarity, angles to the SVD."""
    from gnc_jax.related import gsl

    eps = _single_float(args.epsilon, "epsilon")
    return _print_json_lines(gsl.near_independence_rows(args.nx, args.ny, args.k, eps, args.seed))


def cmd_demo(args) -> int:
    from gnc_jax._src import demo

    _prepare_dir(args.out)
    demo.run(args.out, seed=args.seed)
    return 0


def cmd_sweep(args) -> int:
    from gnc_jax._src.sweep import sweep

    options = _solver_options(args)
    _check_applicable(args, options)
    settings = settings_from_options(args.problem, options)
    ds, Ks = parse_int_spec(args.d, "d"), parse_int_spec(args.K, "K")
    ns = parse_int_spec(args.n, "n", minimum=1) if args.n is not None else None
    taus = parse_float_list(args.tau, "tau") if args.tau is not None else None
    lam = (
        0.0
        if args.weight_decay is None
        else _single_float(args.weight_decay, "weight-decay", allow_zero=True)
    )
    if (args.process_index is None) != (args.process_count is None):
        raise UsageError("give both --process-index and --process-count")
    if args.coordinator is not None and not args.distributed:
        raise UsageError("--coordinator needs --distributed")
    if args.process_count is not None and args.process_index >= args.process_count:
        raise UsageError(
            f"--process-index must be < --process-count, got {args.process_index} of {args.process_count}"
        )
    if args.distributed:  # index and count from the cluster's environment unless given
        import jax

        jax.distributed.initialize(
            coordinator_address=args.coordinator,
            num_processes=args.process_count,
            process_id=args.process_index,
        )
        index, count = jax.process_index(), jax.process_count()
    else:
        index, count = args.process_index or 0, args.process_count or 1
    rep = sweep(
        args.problem,
        ds,
        Ks,
        out=args.out,
        ns=ns,
        taus=taus,
        weight_decay=lam,
        seed=args.seed,
        batch_size=args.batch,
        workers=args.workers,
        process_index=index,
        process_count=count,
        progress=None if args.quiet else sys.stderr,
        release_memory=True,
        neighbours=args.neighbours,
        **settings,
    )
    raised = f", {rep.improved} raised from their neighbours" if args.neighbours else ""
    print(
        f"gnc-jax: {rep.path}: {rep.solved} solved{raised}, {rep.skipped} already there, {rep.total} in "
        f"this process's share ({rep.wall_s:.1f} s)",
        file=sys.stderr,
    )
    return 0


TABLE_VIEW = ("problem", "d", "K", "n", "tau", "min_angle_deg", "max_cos", "rho_one_vs_rest", "n_rattlers")
TABLE_VIEW += ("certificate_gap", "loss", "gnc1", "gnc3", "status", "restarts", "wall_s")


def cmd_table(args) -> int:
    from gnc_jax._src import store
    from gnc_jax._src.known import TABLE

    rows = store.load(args.files or [TABLE])

    def keep(rs):
        if args.problem:
            rs = [r for r in rs if r["problem"] == args.problem]
        if args.d:
            ds = set(parse_int_spec(args.d, "d"))
            rs = [r for r in rs if r["d"] in ds]
        if args.K:
            Ks = set(parse_int_spec(args.K, "K"))
            rs = [r for r in rs if r["K"] in Ks]
        return rs

    rows = keep(rows)
    if args.compare:
        other = {store.row_key(r): r for r in store.best(keep(store.load(args.compare)))}
        mine = {store.row_key(r): r for r in store.best(rows)}
        out, tally = [], {"this run better": 0, "other better": 0, "equal": 0}
        for k in sorted(set(mine) & set(other), key=store.sort_key):
            col, larger = store.SCORE[k[0]]
            a, b = mine[k][col], other[k][col]
            diff = b - a
            verdict = (
                "equal"
                if abs(diff) <= 1e-9
                else ("other better" if (diff > 0) == larger else "this run better")
            )
            tally[verdict] += 1
            out.append(
                dict(zip(store.KEY, k))
                | {"score": col, "this": a, "other": b, "other_minus_this": diff, "verdict": verdict}
            )
        print_rows(out, [*store.KEY, "score", "this", "other", "other_minus_this", "verdict"], args.format)
        only = len(set(mine) - set(other)), len(set(other) - set(mine))
        print(f"gnc-jax: {tally}; only in this run {only[0]}, only in the other {only[1]}", file=sys.stderr)
        return 0
    if args.best:
        rows = store.best(rows)
    columns = list(TABLE_VIEW) if args.columns is None else [c.strip() for c in args.columns.split(",")]
    unknown = [c for c in columns if c not in store.COLUMNS and c != "source"]
    if unknown:
        raise UsageError(f"--columns: unknown column {unknown[0]!r}")
    if args.sort is not None:
        if args.sort not in store.COLUMNS:
            raise UsageError(f"--sort: unknown column {args.sort!r}")
        present = [r for r in rows if r[args.sort] is not None]
        rows = sorted(present, key=lambda r: r[args.sort], reverse=args.descending) + [
            r for r in rows if r[args.sort] is None
        ]
    else:
        rows = sorted(rows, key=lambda r: store.sort_key(store.row_key(r)), reverse=args.descending)
    print_rows(rows, columns, args.format)
    return 0


def cmd_plot(args) -> int:
    from gnc_jax._src import store
    from gnc_jax._src.plots import plot_store

    if args.html and importlib.util.find_spec("plotly") is None:
        raise UsageError("--html needs plotly: pip install 'gnc_jax[demo]'")
    rows = store.load(args.files)
    _prepare_dir(args.out)
    for path in plot_store(rows, args.out, html=args.html):
        print(path)
    return 0


def _run(command, args) -> int:
    """Run a command with float64 on, scoped to the command, so that calling ``main`` from Python
    changes no global JAX setting."""
    from gnc_jax._src.process import float64

    return float64(command)(args)


def program() -> None:
    """The ``gnc-jax`` command as its own process: glibc's allocator tuned for it and JAX's persistent
    compilation cache on (:func:`gnc_jax._src.process.tune_allocator`,
    :func:`gnc_jax._src.process.use_compilation_cache`; process-wide, so not in :func:`main`), then
    :func:`main`."""
    from gnc_jax._src.process import tune_allocator, use_compilation_cache

    tune_allocator()
    use_compilation_cache()
    sys.exit(main())


def main(argv=None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("GNC_JAX_DEBUG", "") not in ("", "0")
    argv = [a for a in argv if a != "--debug"]
    try:
        args = parser.parse_args(argv)
        commands = {
            "solve": cmd_solve,
            "verify-network": cmd_verify_network,
            "rmt": cmd_rmt,
            "gsl": cmd_gsl,
            "class-means": cmd_class_means,
            "demo": cmd_demo,
            "sweep": cmd_sweep,
            "table": cmd_table,
            "plot": cmd_plot,
        }
        return _run(commands[args.command], args)
    except (UsageError, InvalidArgument) as e:  # bad arguments, found before any computation
        print(f"gnc-jax: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print(
            "gnc-jax: interrupted (a sweep keeps its finished rows: run it again to resume)", file=sys.stderr
        )
        # Exit now rather than wait for a sweep's worker threads to finish the batches in flight.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    except Exception as e:  # noqa: BLE001 - a failure inside the computation: one line
        if debug:
            raise
        print(
            f"gnc-jax: failed: {type(e).__name__}: {e} (--debug or GNC_JAX_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return INTERNAL_ERROR


if __name__ == "__main__":
    program()
