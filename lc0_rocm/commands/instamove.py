"""`lc0-rocm policyhead` and `lc0-rocm valuehead`: the UCI engine with lc0 0.32's instamove searches.

`lc0 policyhead` / `lc0 valuehead` are modes of lc0 (its search algorithms, `src/search/instamove/
instamove.cc`): the engine speaks UCI as usual but answers each `go` with the move of highest policy
(policyhead; what Maia plays at one node) or with the best move by the value head one ply down
(valuehead), after one `info depth 1 seldepth 1 nodes N score ...` line. The moves themselves are
`lc0_rocm.instamove`'s. Like lc0, the engine declares only the options these searches read; it takes
the engine's flags (`lc0-rocm --help`).
"""

from __future__ import annotations

import argparse
import sys

from ..engine_options import INSTAMOVE_OPTIONS as MODE_OPTIONS  # what lc0 declares in these modes
HELP = {
    "policyhead": "UCI engine that plays the policy head's best move (lc0's policyhead mode)",
    "valuehead": "UCI engine that plays the value head's best move one ply deep (lc0's valuehead mode)",
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("flags", nargs=argparse.REMAINDER, help="lc0-style flags (lc0-rocm --help lists them)")


def main(algorithm: str, argv: list[str]) -> int:
    """`lc0-rocm <algorithm> [flags]`: the flags set the options, then UCI on stdin/stdout."""
    from .. import engine_options as eo
    from ..uci import UciError

    try:
        settings, extra = eo.settings_from_command_line(argv)
    except eo.OptionError as e:
        print(f"lc0-rocm: error: {e}", file=sys.stderr)
        return 2
    if extra["help"]:
        print(f"Usage: lc0-rocm {algorithm} [flags...]\n\n{HELP[algorithm]}: speaks UCI on stdin/stdout.\n"
              f"Options it reads (each also a flag, see lc0-rocm --help): {', '.join(MODE_OPTIONS)}.")
        return 0
    try:
        engine = instamove_engine(algorithm, settings=settings)
    except (UciError, eo.OptionError) as e:
        print(f"lc0-rocm: error: {e}", file=sys.stderr)
        return 2
    return engine.run()


def instamove_engine(algorithm: str, **kwargs):
    """A `uci.UciEngine` whose `go` runs `algorithm` ("policyhead" or "valuehead"); kwargs as UciEngine's."""
    from ..uci import UciEngine

    return UciEngine(algorithm=algorithm, **kwargs)


def info_line(result, show_wdl: bool) -> str:
    """lc0's `info` line of an instamove search (uci.instamove_info_line)."""
    from ..uci import instamove_info_line

    return instamove_info_line(result, show_wdl)
