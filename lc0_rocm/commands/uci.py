"""`lc0-rocm uci` (also what `lc0-rocm` with no arguments runs): the UCI engine on stdin/stdout.

The flags preset the UCI options of the same meaning (a GUI can still change them with setoption),
named as lc0's command-line flags: -w/--weights, -b/--backend, -o/--backend-opts, --minibatch-size,
--nncache.
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", "-w", metavar="FILE", help="network file (UCI WeightsFile; default: the bundled net)")
    parser.add_argument("--backend", "-b", metavar="NAME", help="rocm-auto (default), rocm, rocm-fp16 or cpu (UCI Backend)")
    parser.add_argument("--backend-opts", "-o", metavar="OPTS", help="lc0-style backend options (UCI BackendOptions)")
    parser.add_argument("--minibatch-size", type=int, metavar="N", help="UCI MinibatchSize (0: backend suggestion)")
    parser.add_argument("--nncache", type=int, metavar="N", help="UCI NNCacheSize (entries)")


def run(args: argparse.Namespace) -> int:
    from ..uci import UciEngine

    overrides = {
        "WeightsFile": getattr(args, "weights", None),
        "Backend": getattr(args, "backend", None),
        "BackendOptions": getattr(args, "backend_opts", None),
        "MinibatchSize": getattr(args, "minibatch_size", None),
        "NNCacheSize": getattr(args, "nncache", None),
    }
    return UciEngine(overrides=overrides).run()
