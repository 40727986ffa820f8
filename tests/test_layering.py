"""The package's layers only look down: every import between lc0_rocm's parts goes from a higher layer to
a lower one (docs/design.md draws the same picture), and only the GPU backend reaches into lc0_rocm.gpu.

Read from the source (lc0_rocm/import_graph.py, the resolver jit.py's cache key uses too: every import statement,
function-level ones included), so it runs anywhere.
A new module of lc0_rocm must be given its layer in LAYERS. No module imports itself back through others,
in the same layer or not (test_no_import_circle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lc0_rocm.import_graph import imports_in, imports_of, module_name

PKG = Path(__file__).resolve().parent.parent / "lc0_rocm"

# bottom (0) to top; a part may import parts of lower layers and its own part only
LAYERS = {
    "import_graph": -1,  # the import graph read from sources (this test's and jit.py's): imports nothing
    "errors": 0, "jit": 0, "ccall": 0, "activations": 0, "blas_threads": 0, "values": 0, "default_net": 0, "version": 0,
    "engine_options": 1,  # the option table, read by every layer above
    "encoding": 1,  # PackedPlanes, NetOutputs, policy map, position encoding: the I/O contract
    "fastmath": 1,  # lc0's fast math, compiled (the WDL rescale)
    "net": 2,  # NetDescription, loader, writer
    "board": 2,  # the compiled board: rules, move codes, input encoder (the search's and analyse's)
    "score": 2,  # UCI scores (cp, mate, wdl) of values: the search's reports and analyse's records
    "validation_positions": 2,  # the validate suites, built on encoding's start position
    "reference": 3, "onnx_export": 3,
    "gpu.runtime": 3,  # hip-python only
    "gpu.nn": 4,  # the network on the runtime
    "gpu": 4,  # the package's own __init__ (a docstring)
    "backends": 5,
    "search": 6, "api": 6,
    "bench": 7, "instamove": 7,
    "searchers": 8,  # the search algorithms behind the engine (MCTS, instamove) and their registry
    "engine": 9,  # the engine controller: options, position, net lifecycle, fault policy, go/stop/abort
    "analyse": 10, "uci": 10,  # uci: the protocol only
    "commands": 11, "cli": 11,
    "__init__": 12,  # lc0_rocm's lazy exports
}
GPU_IMPORTERS = ("backends.rocm", "backends.gpu_lanes")  # the only modules outside gpu/ that may import it
# Known upward imports, each with its reason; the list only shrinks.
EXCEPTIONS: set = set()  # none: every import looks down


def _module_name(path: Path) -> str:
    return module_name(path, PKG)


def _imports(path: Path) -> set[str]:
    """lc0_rocm-relative names of the modules `path` imports."""
    return imports_of(path, PKG)


def _imports_in(source: str, mod: str, is_package: bool) -> set[str]:
    """`import_graph.imports_in` for the source of module `mod` (a package if `is_package`)."""
    return imports_in(source, mod if is_package else mod.rpartition(".")[0], PKG)


def _part(name: str) -> str:
    parts = name.split(".")
    if parts[0] == "gpu" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0]


MODULES = sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_part_has_a_layer():
    missing = sorted({_part(_module_name(p)) for p in MODULES} - set(LAYERS))
    assert not missing, f"give these parts of lc0_rocm a layer in LAYERS: {missing}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: _module_name(p))
def test_imports_only_look_down(path):
    mod = _module_name(path)
    src = _part(mod)
    if src not in LAYERS:
        pytest.skip(f"{src} has no layer (test_every_part_has_a_layer says so)")
    upward = []
    for target in sorted(_imports(path)):
        dst = _part(target)
        if dst == src or dst not in LAYERS:
            continue
        if LAYERS[dst] >= LAYERS[src] and (mod, target) not in EXCEPTIONS:
            upward.append(f"{target} (layer {LAYERS[dst]} from layer {LAYERS[src]})")
        if dst.startswith("gpu") and not src.startswith("gpu") and mod not in GPU_IMPORTERS:
            upward.append(f"{target} (only {', '.join(GPU_IMPORTERS)} may import lc0_rocm.gpu)")
    assert not upward, f"{mod} imports upward: " + "; ".join(upward)


def test_package_level_imports_are_seen():
    """An import of the package's `__init__` (e.g. the version) is an import like any other."""
    for source, mod in [("from . import __version__", "uci"), ("from .. import __version__", "search.search"),
                        ("from lc0_rocm import __version__", "uci"), ("import lc0_rocm", "engine"),
                        ("def f():\n    from ... import x", "gpu.nn.network")]:
        assert _imports_in(source, mod, False) == {"__init__"}, source
    assert _imports_in("from . import errors, __version__", "uci", False) == {"errors", "__init__"}
    assert _imports_in("from . import api", "", True) == {"api"}


def test_gpu_runtime_knows_nothing_of_networks():
    """The runtime layer imports hip-python, numpy and lc0_rocm.errors only."""
    for path in (PKG / "gpu" / "runtime").glob("*.py"):
        outside = {t for t in _imports(path) if not t.startswith("gpu.runtime")} - {"errors"}
        assert not outside, f"{_module_name(path)} imports {sorted(outside)}"


def _import_graph() -> dict[str, set[str]]:
    """module -> the lc0_rocm modules it imports (function-level imports included)."""
    graph = {_module_name(p): set() for p in MODULES}
    for p in MODULES:
        graph[_module_name(p)] = {t for t in _imports(p) if t in graph and t != _module_name(p)}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path back to its start) per strongly connected component of more than one module
    (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = set()
                    while True:
                        x = stack.pop()
                        on_stack.discard(x)
                        comp.add(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        comps.append(comp)
            elif w not in index:
                index[w] = low[w] = len(index)
                stack.append(w)
                on_stack.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on_stack:
                low[v] = min(low[v], index[w])
    cycles = []
    for comp in comps:  # a shortest way from the component's first module back to itself
        start = min(comp)
        prev, frontier = {start: None}, [start]
        while frontier and start not in [w for v in frontier for w in graph[v]]:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & comp):
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        last = next(v for v in frontier if start in graph[v])
        path = [last]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        cycles.append(path[::-1] + [start])
    return cycles


def test_no_import_circle():
    """No module of lc0_rocm imports, directly or through others, a module that imports it back (the
    same layer included, where test_imports_only_look_down cannot see it)."""
    cycles = _cycles(_import_graph())
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_circle_finder_finds_circles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_runs_without_numba():
    """The layering reads sources only: this module (and tests/conftest.py for it) runs where numba is
    not installed (here: where importing it fails)."""
    code = ("import sys; sys.modules['numba'] = None; import pytest; "
            "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', __file__, '-k', 'not without_numba']))")
    p = subprocess.run([sys.executable, "-c", code.replace("__file__", repr(__file__))], capture_output=True,
                       text=True, timeout=120, cwd=PKG.parent)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
