"""The `lc0-rocm` command line: dispatches to one module per sub-command; no arguments (or only
lc0-style flags, or `uci`) speaks UCI, with `--help` listing every engine flag; `--version` prints
the version (`lc0_rocm/version.py`, which pyproject.toml reads too).

Every `Lc0RocmError` (and a missing or unreadable file) becomes one line on stderr and exit code 1,
never a traceback.
"""

from __future__ import annotations

import argparse
import atexit
import gc
import importlib
import sys

# At its exit the interpreter's last collections walk every object a run made (numba's compiled code,
# the net's layers, the games' arrays): 0.4-0.6 s after `analyse` on the 2-core VM, 0.15 s frozen
# (docs/perf.md), and a GUI waits that long after `quit`. Frozen, those objects are left to the
# process's end, as everything the collections would have found is: the commands close their files.
atexit.register(gc.freeze)

# sub-command -> (module under lc0_rocm.commands, one-line help)
COMMANDS = {
    "uci": ("uci", "speak UCI on stdin/stdout (the default with no arguments)"),
    "eval": ("evaluate", "evaluate one position and print policy, WDL, Q and moves-left"),
    "describenet": ("describenet", "print a network's architecture"),
    "make-net": ("make_net", "write a random-weight network of a given shape"),
    "export-onnx": ("export_onnx", "write the network as an ONNX graph"),
    "validate": ("validate", "compare a backend with the CPU reference"),
    "backendbench": ("backendbench", "nps of a backend against batch size, as lc0 prints it"),
    "analyse": ("analyse", "evaluate the positions of game collections (PGN/EPD/FEN) to JSONL, CSV, annotated PGN, plots"),
    "benchmark": ("benchmark", "search lc0's 34 benchmark positions for 10 s each and print nodes/second, as lc0"),
    "bench": ("benchmark", "lc0's very quick benchmark: 10 positions, 0.5 s each"),
    "policyhead": ("instamove", "UCI engine playing the policy head's best move (lc0's policyhead mode)"),
    "valuehead": ("instamove", "UCI engine playing the value head's best move one ply deep (lc0's valuehead mode)"),
}
# lc0's modes that take the engine's flags (--threads=2, -w NET) rather than argparse's: their module's
# main(command, argv) parses them
LC0_MODES = ("benchmark", "bench", "policyhead", "valuehead")


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
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:
        from .version import __version__

        print(f"lc0-rocm {__version__}")
        return 0
    if not argv or argv[0] == "uci" or argv[0].startswith("-"):
        # the engine: GUIs start it bare or with lc0's flags (-w NET, --threads=2); straight to the
        # UCI loop, importing nothing heavy before `uciok`
        from .uci import main as uci_main

        rest = argv[1:] if argv and argv[0] == "uci" else argv
        if any(a in ("-h", "--help") for a in rest):
            from .engine_options import help_text

            print(help_text("--show-hidden" in rest))
            print("\nCommands (lc0-rocm COMMAND --help for each):")
            for name, (_, text) in COMMANDS.items():
                print(f"  {name:<18} {text}")
            return 0
        try:
            return uci_main(rest)
        except KeyboardInterrupt:
            return 130
    if argv[0] in LC0_MODES:
        return _guarded(lambda: _load(COMMANDS[argv[0]][0]).main(argv[0], argv[1:]))
    return _run_command(argv)


def _run_command(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "_module", None) is None:
        build_parser().print_help()
        return 2
    return _guarded(lambda: _load(args._module).run(args))


def _guarded(command) -> int:
    """Run a command; its errors become one line on stderr and exit code 1."""
    from .errors import Lc0RocmError, one_line

    try:
        return int(command() or 0)
    except Lc0RocmError as e:
        print(f"lc0-rocm: error: {one_line(e)}", file=sys.stderr)
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
