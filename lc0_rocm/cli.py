"""The `lc0-rocm` command line: dispatches to one module per sub-command; no arguments speaks UCI.

Every `Lc0RocmError` (and a missing or unreadable file) becomes one line on stderr and exit code 1,
never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# sub-command -> (module under lc0_rocm.commands, one-line help)
COMMANDS = {
    "uci": ("uci", "speak UCI on stdin/stdout (the default with no arguments)"),
    "eval": ("evaluate", "evaluate one position and print policy, WDL, Q and moves-left"),
    "describenet": ("describenet", "print a network's architecture"),
    "make-net": ("make_net", "write a random-weight network of a given shape"),
    "export-onnx": ("export_onnx", "write the network as an ONNX graph"),
    "validate": ("validate", "compare a backend with the CPU reference"),
    "backendbench": ("backendbench", "nps of a backend against batch size, as lc0 prints it"),
    "build-hip-on-cuda": ("build_hip_on_cuda", "build the HIP-on-CUDA test libraries (NVIDIA only)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lc0-rocm", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_text) in COMMANDS.items():
        try:
            mod = _load(module)
        except ModuleNotFoundError as e:  # a command not built yet in this checkout
            if e.name != f"lc0_rocm.commands.{module}":
                raise
            continue
        sp = sub.add_parser(name, help=help_text, description=help_text)
        sp.set_defaults(_module=module)
        mod.configure(sp)
    return parser


def _load(module: str):
    """Command modules keep heavy imports (onnx, hip, numpy-heavy code) inside run()."""
    return importlib.import_module(f"lc0_rocm.commands.{module}")


def main(argv: list[str] | None = None) -> int:
    from .errors import Lc0RocmError

    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv = ["uci"] + argv  # GUIs start engines bare or with lc0-style flags (-w NET)
    args = build_parser().parse_args(argv)
    try:
        return int(_load(args._module).run(args) or 0)
    except Lc0RocmError as e:
        print(f"lc0-rocm: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}", file=sys.stderr)
        return 1
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        print(f"lc0-rocm: error: {e.strerror}: {e.filename}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
