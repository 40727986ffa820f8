"""analyse's raw mode (one network evaluation per position, no search) imports nothing of the search:
its compiled replay and encoder come from the compiled board (lc0_rocm/board/), its scores from
lc0_rocm/score.py, both below the search (tests/test_layering.py's layers). Read from a fresh process
that imports every module of analyse but the search mode's and runs `lc0-rocm analyse` in raw mode
with every output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPUS = HERE / "data" / "pgn_corpus"

CODE = """
import importlib, json, math, pkgutil, sys
import lc0_rocm.analyse
from lc0_rocm.cli import main
for m in pkgutil.iter_modules(lc0_rocm.analyse.__path__):
    if m.name != "search_mode":  # --nodes N: the search, by definition
        importlib.import_module("lc0_rocm.analyse." + m.name)
from lc0_rocm.analyse.records import centipawns, pgn_eval
cp = int(90 * math.tan(1.5637541897 * 0.5))  # lc0's `centipawn` score type, truncated
assert centipawns(0.5) == cp and pgn_eval(-0.5) == f"{-cp / 100:.2f}", (centipawns(0.5), pgn_eval(-0.5))
rc = main(["analyse", "-b", "random", "--workers", "0", "--no-progress", *sys.argv[1:]])
print(json.dumps([rc, sorted(m for m in sys.modules if m == "lc0_rocm.search" or m.startswith("lc0_rocm.search."))]))
"""


def test_raw_mode_imports_nothing_of_the_search(tmp_path):
    outs = {"--jsonl": tmp_path / "a.jsonl", "--csv": tmp_path / "a.csv", "--pgn-out": tmp_path / "a.pgn",
            "--summary": tmp_path / "s.csv", "--html": tmp_path / "a.html"}
    args = [x for k, v in outs.items() for x in (k, str(v))]
    args += [str(CORPUS / "lichess.pgn"), str(CORPUS / "chess960.pgn")]
    p = subprocess.run([sys.executable, "-c", CODE, *args], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    rc, search_modules = json.loads(p.stdout.splitlines()[-1])
    assert rc == 0, p.stderr[-3000:]
    assert search_modules == [], search_modules
    records = [json.loads(line) for line in outs["--jsonl"].read_text().splitlines()]
    assert len(records) > 50 and all(r["fen"] for r in records)
    assert "[%eval " in outs["--pgn-out"].read_text()
