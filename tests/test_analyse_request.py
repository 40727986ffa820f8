"""analyse takes a typed request built once from the command line: `commands/analyse.py`'s
`build_request` is the only reader of argparse's namespace, and no module of `lc0_rocm/analyse/`
reads one (checked on the source by ast, every function included)."""

from __future__ import annotations

import ast
import dataclasses
import os
from pathlib import Path

import pytest

from lc0_rocm.analyse.reader import InputError, Selection
from lc0_rocm.analyse.records import THRESHOLDS, Thresholds
from lc0_rocm.analyse.request import AnalyseRequest
from lc0_rocm.cli import build_parser
from lc0_rocm.commands.analyse import build_request

ANALYSE = Path(__file__).resolve().parent.parent / "lc0_rocm" / "analyse"


def _namespace_reads(path: Path) -> list[str]:
    """`args.x` reads and argparse imports in one module, as 'line: text'."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
            found.append(f"{node.lineno}: args.{node.attr}")
        elif isinstance(node, ast.Import) and any(a.name == "argparse" for a in node.names):
            found.append(f"{node.lineno}: import argparse")
        elif isinstance(node, ast.ImportFrom) and node.module == "argparse":
            found.append(f"{node.lineno}: from argparse import")
    return found


def test_no_analyse_module_reads_argparse():
    modules = sorted(ANALYSE.glob("*.py"))
    assert len(modules) > 10
    bad = {p.name: r for p in modules if (r := _namespace_reads(p))}
    assert bad == {}


def test_the_check_sees_a_namespace_read(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("import argparse\ndef run(args):\n    return args.nodes\n")
    assert _namespace_reads(p) == ["1: import argparse", "3: args.nodes"]


def test_the_run_takes_a_request():
    import inspect

    from lc0_rocm.analyse import driver

    params = list(inspect.signature(driver.run).parameters.values())
    assert [p.annotation for p in params] == ["AnalyseRequest"]


def _request(*argv: str) -> AnalyseRequest:
    return build_request(build_parser().parse_args(["analyse", *argv]))


def test_request_from_the_command_line(tmp_path):
    pgn = tmp_path / "g.pgn"
    pgn.write_text("1. e4 e5 *\n")
    req = _request(str(pgn), "--nodes", "7", "--plies", "3-9", "--side", "white", "--every", "2",
                   "--mistake", "0.12", "--pgn-out", "o.pgn", "--jsonl", "-", "--workers", "3",
                   "--backend", "cpu", "-o", "threads=2", "--batch-size", "64", "--max-games", "4")
    assert dataclasses.is_dataclass(req) and req.__dataclass_params__.frozen
    assert req.inputs.paths == (str(pgn),) and req.inputs.format == "auto"
    assert req.mode == "search" and req.nodes == 7 and req.top == 5 and req.max_games == 4
    assert req.selection == Selection(3, 9, "white", 2)
    lichess = THRESHOLDS["lichess"]
    assert req.thresholds == Thresholds(lichess.inaccuracy, 0.12, lichess.blunder)
    assert req.outputs.paths() == {"jsonl": "-", "csv": None, "pgn": "o.pgn", "summary": None}
    assert req.outputs.wanted() == {"jsonl", "pgn"}
    assert (req.backend.name, req.backend.options, req.backend.batch_size, req.backend.weights) == \
        ("cpu", "threads=2", 64, None)
    assert (req.scale.workers, req.scale.ray, req.scale.ray_actors) == (3, None, 0)
    assert req.annotator() == "lc0-rocm analyse (default net, search 7 nodes)"
    assert req.signature["inputs"] == [os.path.abspath(pgn)] and req.signature["plies"] == "3-9"
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.nodes = 8


def test_a_bad_value_fails_while_building(tmp_path):
    pgn = tmp_path / "g.pgn"
    pgn.write_text("1. e4 e5 *\n")
    with pytest.raises(InputError, match="--nodes 0"):
        _request(str(pgn), "--nodes", "0")


def test_jsonl_on_stdout_when_no_file_is_asked(tmp_path):
    pgn = tmp_path / "g.pgn"
    pgn.write_text("1. e4 e5 *\n")
    req = _request(str(pgn))
    assert req.mode == "raw" and req.outputs.wanted() == {"jsonl"}
    assert req.annotator() == "lc0-rocm analyse (default net, raw network)"
