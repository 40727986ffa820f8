"""`lc0-rocm uci` (also what `lc0-rocm` with no arguments runs): the UCI engine on stdin/stdout.

The engine takes lc0's flags, one per UCI option (`lc0-rocm --help` lists them; `engine_options`
parses them); `cli.main` hands them to `uci.main` directly, so this module only registers the
command's name and help for `lc0-rocm --help`.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("flags", nargs=argparse.REMAINDER, help="lc0-style flags (lc0-rocm --help lists them)")


def run(args: argparse.Namespace) -> int:
    from ..uci import main

    return main(list(args.flags))
