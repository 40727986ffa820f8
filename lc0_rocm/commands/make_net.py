"""`lc0-rocm make-net`: write a random-weight network of a named shape (tiny, t82, bt4, se, ...)."""

from __future__ import annotations

import argparse

from ..values import parse_bool, parse_int

# command-line option -> NetShape field (all optional overrides of the shape's defaults)
_INT_OVERRIDES = {
    "embedding": "attention-body embedding size E",
    "layers": "encoder layers",
    "heads": "attention heads",
    "dff": "encoder FFN hidden size",
    "filters": "conv tower filters",
    "blocks": "conv tower residual blocks",
    "se_channels": "squeeze-excitation hidden size (0: no SE)",
    "preproc_d": "PE_DENSE positional channels per square D",
    "emb_dff": "PE_DENSE embedding FFN hidden size",
    "policy_embedding": "attention policy embedding size",
    "policy_d_model": "attention policy d_model",
    "policy_encoders": "policy encoder layers",
    "value_channels": "value head channels",
    "mlh_channels": "moves-left head channels",
}


def configure(parser: argparse.ArgumentParser) -> None:
    from ..net.codec import ENCODINGS
    from ..net.make_net import SHAPES  # light: numpy + protobuf only

    parser.add_argument("--shape", default="tiny", choices=sorted(SHAPES), help="net shape (default tiny)")
    parser.add_argument("--out", required=True, help="output file (.pb.gz, or .pb for plain protobuf)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--input-format", type=int, help="lc0 input format number (1, 2, 3, 4, 5, 132, 133)")
    parser.add_argument("--encoding", choices=list(ENCODINGS),
                        help="layer encoding (default LINEAR16, the only one lc0 v0.32 reads)")
    for name, help_text in _INT_OVERRIDES.items():
        parser.add_argument("--" + name.replace("_", "-"), type=int, dest=name, help=help_text)
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override any NetShape field, e.g. --set smolgen=false --set input_embedding=pe_map")


def _parse_value(text: str, current):
    if isinstance(current, bool):
        return parse_bool(text)
    if isinstance(current, tuple):
        return tuple(x for x in text.split(",") if x)
    if isinstance(current, int) or (current is None and text.lstrip("-").isdigit()):
        return parse_int(text)
    if text.lower() == "none":
        return None
    return text


def run(args) -> int:
    from ..errors import Lc0RocmError
    from ..net.make_net import make_net, net_shape
    from ..net.writer import write_net

    overrides = {name: getattr(args, name) for name in _INT_OVERRIDES}
    overrides["input_format"] = args.input_format
    overrides["encoding"] = args.encoding
    try:
        base = net_shape(args.shape)
        for item in args.set:
            key, sep, text = item.partition("=")
            key = key.strip().replace("-", "_")
            if not sep or not hasattr(base, key):
                raise ValueError(f"--set {item}: expected FIELD=VALUE with a NetShape field")
            try:
                overrides[key] = _parse_value(text.strip(), getattr(base, key))
            except ValueError as e:  # values.py's rule: the caller puts its own name in front
                raise ValueError(f"--set {item}: {e}") from None
        net = make_net(args.shape, seed=args.seed, **overrides)
    except ValueError as e:
        raise Lc0RocmError(str(e)) from None
    path = write_net(net, args.out)
    print(f"wrote {path} ({path.stat().st_size} bytes, shape {args.shape}, seed {args.seed})")
    return 0
