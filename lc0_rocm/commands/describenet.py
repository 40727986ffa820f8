"""`lc0-rocm describenet`: print a network's architecture (formats, dimensions, heads, parameters)."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", help="weights file (.pb.gz or plain protobuf; default: the default net)")
    parser.add_argument("-w", "--weights", dest="weights", help="weights file (same as the positional argument)")
    parser.add_argument("--policy-head", default="vanilla", help="policy head to describe (default vanilla)")
    parser.add_argument("--value-head", default="winner", help="value head to describe (default winner)")


def run(args) -> int:
    from ..default_net import default_net_path
    from ..net.describe import describe
    from ..api import load_net  # the loader plus the start-position proof

    path = args.file or args.weights or default_net_path()
    net = load_net(path, policy_head=args.policy_head, value_head=args.value_head)
    print(describe(net))
    return 0
