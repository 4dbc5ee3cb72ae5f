"""`gnc-jax`: a thin command-line layer over the API.

Exit status 0 on success, 2 on bad input (one line on stderr), 1 on an internal failure.
Results go to stdout (``--format table`` or ``json`` lines), progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

USAGE_ERROR, INTERNAL_ERROR = 2, 1


class UsageError(Exception):
    """Bad input from the command line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the usage too)
        raise UsageError(message)


def parse_int_spec(text: str, name: str) -> list[int]:
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
    bad = [v for v in out if v < 2]
    if bad:
        raise UsageError(f"--{name} values must be >= 2, got {bad[0]}")
    return sorted(set(out))


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gnc-jax", description="Softmax codes, Tammes codes and generalized neural collapse."
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    solve = sub.add_parser("solve", help="solve an arrangement problem for every (d, K) of a grid")
    solve.add_argument("problem", choices=["tammes", "softmax-code"])
    solve.add_argument("--d", required=True, help="dimension(s): 5, 3,4, 2:9 (end exclusive), 4:15,24")
    solve.add_argument("--K", required=True, help="number(s) of points, same syntax")
    solve.add_argument("--restarts", type=_int_at_least("restarts", 1), default=None)
    solve.add_argument("--seed", type=_int_at_least("seed", 0), default=0)
    solve.add_argument(
        "--steps", type=_int_at_least("steps", 1), default=None, help="main continuation steps"
    )
    solve.add_argument("--hop-rounds", type=_int_at_least("hop-rounds", 0), default=None)
    solve.add_argument("--dtype", choices=["float64", "float32"], default=None)
    solve.add_argument("--save", metavar="DIR", help="write DIR/{problem}_d{d}_K{K}.npy (float64, (d, K))")
    solve.add_argument("--format", choices=["table", "json"], default="table")
    demo = sub.add_parser("demo", help="solve a small grid, compare with closed forms and bounds, plot")
    demo.add_argument("--out", default="demo_out", help="folder for results.csv and codes.png")
    demo.add_argument("--seed", type=_int_at_least("seed", 0), default=0)
    return parser


def _prepare_dir(path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create directory {path!r}: {e.strerror}") from None
    if not os.access(path, os.W_OK):
        raise UsageError(f"directory {path!r} is not writable")


TABLE_COLUMNS = [  # name, width, format spec
    ("d", 3, "d"),
    ("K", 5, "d"),
    ("min_angle_deg", 16, ".10f"),
    ("max_cos", 16, ".12f"),
    ("rho_one_vs_rest", 16, ".12f"),
    ("closed_form", 16, ""),
    ("n_rattlers", 10, "d"),
    ("certificate_gap", 15, ".1e"),
    ("status", 10, ""),
    ("hits", 9, ""),
    ("wall_s", 8, ".2f"),
]


def _row(sol) -> dict:
    from gnc_jax import theory

    row = sol.summary()
    if sol.problem == "softmax-code":
        cf = theory.softmax_code_closed_form(sol.d, sol.K)
        row["closed_form"] = None if cf is None else cf[0]
    else:
        row["closed_form"] = theory.tammes_closed_form(sol.d, sol.K)
    return row


def print_table(rows, file=sys.stdout) -> None:
    print(" ".join(f"{name:>{width}}" for name, width, _ in TABLE_COLUMNS), file=file)
    for row in rows:
        cells = dict(row)
        cells["closed_form"] = "-" if row["closed_form"] is None else f"{row['closed_form']:.12f}"
        cells["hits"] = f"{row['hits']}/{row['restarts']}"
        print(" ".join(f"{cells[name]:>{width}{spec}}" for name, width, spec in TABLE_COLUMNS), file=file)


def cmd_solve(args) -> int:
    import numpy as np

    import gnc_jax

    ds = parse_int_spec(args.d, "d")
    Ks = parse_int_spec(args.K, "K")
    if args.save:
        _prepare_dir(args.save)
    overrides = {
        k: v
        for k, v in (
            ("restarts", args.restarts),
            ("steps", args.steps),
            ("hop_rounds", args.hop_rounds),
            ("dtype", args.dtype),
        )
        if v is not None
    }
    print(f"gnc-jax: solving {args.problem} for {len(ds) * len(Ks)} pair(s)...", file=sys.stderr)
    sols = gnc_jax.solve(args.problem, ds, Ks, seed=args.seed, **overrides)
    rows = [_row(s) for s in sols]
    if args.format == "json":
        for row in rows:
            print(json.dumps(row))
    else:
        print_table(rows)
    if args.save:
        for s in sols:
            np.save(os.path.join(args.save, f"{s.problem}_d{s.d}_K{s.K}.npy"), s.W.astype(np.float64))
    return 0


def cmd_demo(args) -> int:
    from gnc_jax import demo

    _prepare_dir(args.out)
    demo.run(args.out, seed=args.seed)
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return {"solve": cmd_solve, "demo": cmd_demo}[args.command](args)
    except UsageError as e:
        print(f"gnc-jax: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except ValueError as e:  # validation errors from the API name the argument
        print(f"gnc-jax: error: {e}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("gnc-jax: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - one line, never a traceback
        print(f"gnc-jax: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        return INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())
