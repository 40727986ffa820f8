"""`lc0-rocm export-onnx`: write a network as an ONNX graph (opset 17, float32).

Input `/input/planes` [N, 112, 8, 8]; outputs `/output/policy` (raw logits), `/output/wdl` or
`/output/value`, and `/output/mlh` when the net has a moves-left head (see `lc0_rocm.onnx_export`).
"""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--weights", "-w", metavar="FILE", help="network file (default: the bundled net)")
    parser.add_argument("--out", "-o", required=True, metavar="FILE.onnx", help="where to write the ONNX model")
    parser.add_argument("--policy-head", default="vanilla", help="policy head of a multihead net (default vanilla)")
    parser.add_argument("--value-head", default="winner", help="value head of a multihead net (default winner)")


def run(args) -> int:
    from pathlib import Path

    from ..default_net import default_net_path
    from ..errors import Lc0RocmError
    from ..api import load_net  # the loader plus the start-position proof
    from ..onnx_export import export_onnx

    out = Path(args.out)
    if out.is_dir():
        raise Lc0RocmError(f"--out {out} is a directory")
    if not out.parent.exists():
        raise Lc0RocmError(f"--out: directory {out.parent} does not exist")
    net = load_net(args.weights or default_net_path(), policy_head=args.policy_head, value_head=args.value_head)
    export_onnx(net, out)
    print(f"wrote {out} ({out.stat().st_size} bytes; policy head {net.policy_head_name}, "
          f"value head {net.value_head_name})")
    return 0
