"""The one place compiled code gets its compiler: numba's `njit`, cached on disk, keyed by the code.

Every compiled function of lc0_rocm (the search's, search/core/, and what it is built on, board/ and
fastmath.py; analyse's game arrays; the random and trivial backends') is declared with `@jit` from
here: `njit(cache=True, nogil=True, _nrt=False, error_model="numpy")`, so compiled code runs without
the GIL (the backend's thread keeps working), is compiled once per machine, and keeps no reference
counts: arrays are passed by value, never allocated, so a call that takes the tree (a namedtuple of
25 arrays) costs nothing, where numba's reference counting made every such call cost ~260 ns
(measured). The few functions that allocate use `@jit_alloc` (reference counting on). Both add the
function to `COMPILED`, and compile it once per argument type when compiled code calls it, not once
per constant it is called with (`_one_body_per_type`). `error_model="numpy"`: no arithmetic raises
(a division by zero gives inf, NaN or, for integers, 0), so no exception can leave a spin lock of the
shared tree taken (search/core/tree.py's concurrency table); bounds are not checked (numba's default,
unless NUMBA_BOUNDSCHECK=1 is set for debugging), so indexing raises nothing either.

The cache: `$LC0_ROCM_CACHE/numba/<key>` (default `~/.cache/lc0-rocm/numba/<key>`; an explicit
NUMBA_CACHE_DIR replaces `$LC0_ROCM_CACHE/numba`), never next to the sources, so a read-only
site-packages works. numba checks only a function's own file, so a cached function that inlined code
from another module changed since would otherwise be reused stale: `<key>` hashes the code of the
modules a compiled function may take code or constants from. For the search that is every module of
search/core/, of the compiled board it is built on (board/: rules, move codes, input encoder, shared
with analyse) and lc0's fast math (fastmath.py), and every lc0_rocm module they import, directly or
not (encoding's constants, this one); the board's and fastmath's functions are cached in the
search's folder, so that one folder holds all a first start compiles. For a compiled function
elsewhere: its own module and what it imports. The hash is of each module's syntax tree without its
docstrings: comments, docstrings and line breaks change nothing, and the search's control code
(search/*.py outside core/, the time manager) is not in it at all. Unlike numba's own
NUMBA_CACHE_DIR locator, the folder does not depend on where the sources are installed: every copy
of the same sources (an editable checkout, a wheel in a venv, a reinstall) shares one compiled
search. The keys are remembered in `<cache>/keys/<fingerprint>.json` (`code_key`: the fingerprint hashes
every module's path and bytes), so a process on sources seen before parses no syntax tree. numba keys
each entry by the signature, the CPU (LLVM triple, CPU name and features:
`CPUCodegen.magic_tuple`), the function's bytecode (not its line numbers), the Python version (the
file name) and its own version (the index), so another CPU or numba recompiles.

`ready_file()` marks a cache that holds the whole search for this CPU: search/precompile.py writes
it after compiling, with the entry points a search calls from Python, which `load_compiled()` then
loads (about a second) instead of letting the first search load them one call at a time.
Importing this module imports numba (about 0.3 s): modules that must answer fast (the UCI loop
before `isready`) import the search lazily.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib
import json
import os
import pickle
import sys
from pathlib import Path

import numba
from numba.core import caching, types

from .import_graph import imports_of, module_file

PKG = Path(__file__).resolve().parent
SEARCH_CORE = PKG / "search" / "core"  # the compiled search: one cache folder for all of it
BOARD = PKG / "board"  # the compiled code below the search that it inlines (and analyse shares) ...
FASTMATH = PKG / "fastmath.py"  # ... cached in the search's folder, keyed with it
COMPILED: list = []  # every @jit / @jit_alloc function, in import order


def _imported_files(path: Path, pkg: Path) -> set:
    """The files of the lc0_rocm modules `path` imports (`import_graph.imports_of`: every import
    statement, function-level ones included); none for a file outside `pkg`."""
    try:
        names = imports_of(path, pkg)
    except ValueError:  # not in the package
        return set()
    return {f for f in (module_file(n, pkg) for n in names) if f is not None}


def closure(files, pkg: Path = PKG) -> list:
    """`files` and every module of lc0_rocm (in folder `pkg`) they import, directly or not, sorted."""
    seen, todo = set(), [Path(f).resolve() for f in files]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(_imported_files(f, pkg) - seen)
    return sorted(seen)


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def code_hash(path: Path) -> str:
    """Hash of the code of one module: its syntax tree without docstrings (nor comments, nor
    positions), so that only an edit of what runs changes it."""
    tree = _strip_docstrings(ast.parse(Path(path).read_text()))
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def code_key(files, pkg: Path = PKG) -> str:
    """The key of the code compiled from `files`: `code_hash` of each module of their `closure`.

    Remembered on disk per `package_fingerprint` (every module's path and bytes: the key is a function
    of them alone), so a process whose sources were seen before reads the key (~10 ms) instead of
    parsing and hashing the syntax trees again (0.5-0.7 s a process on the 2-core VM: every analyse
    worker, the engine's `isready`); files outside `pkg` are hashed every time."""
    files = [Path(f).resolve() for f in files]
    pkg = Path(pkg).resolve()
    if not all(pkg in f.parents for f in files):
        return _code_key(files, pkg)
    store = _base_dir() / "keys" / f"{package_fingerprint(pkg)}.json"
    name = ",".join(sorted(f.relative_to(pkg).as_posix() for f in files))
    key = _read_keys(store).get(name)
    if key is None:
        key = _code_key(files, pkg)
        _write_keys(store, {**_read_keys(store), name: key})
    return key


def package_fingerprint(pkg: Path = PKG) -> str:
    """A hash of every module of the package in folder `pkg`: its path in the package and its bytes (and
    the folder's name, which `_code_key`'s module names start with)."""
    h = hashlib.sha256(Path(pkg).name.encode())
    for f in sorted(p for p in Path(pkg).rglob("*.py") if "__pycache__" not in p.parts):
        data = f.read_bytes()
        h.update(f.relative_to(pkg).as_posix().encode())
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()[:32]


def _read_keys(store: Path) -> dict:
    try:
        keys = json.loads(store.read_text())
    except (OSError, ValueError):
        return {}
    return keys if isinstance(keys, dict) else {}


def _write_keys(store: Path, keys: dict) -> None:
    """Replace the file atomically (concurrent processes: the last one's keys stay, any lost one is
    computed again); an unwritable cache only costs the next process the hashing."""
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        tmp = store.with_name(f"{store.name}.tmp.{os.getpid()}")
        tmp.write_text(json.dumps(keys, sort_keys=True))
        os.replace(tmp, store)
    except OSError:
        pass


def _code_key(files, pkg: Path) -> str:
    h = hashlib.sha256()
    for f in closure(files, pkg):
        try:
            name = f.relative_to(pkg.parent).as_posix()
        except ValueError:
            name = f.name
        h.update(name.encode())
        h.update(code_hash(f).encode())
    return h.hexdigest()[:16]


def search_sources(pkg: Path = PKG) -> list:
    """The modules of the compiled search (of lc0_rocm in folder `pkg`): search/core/, board/ and
    fastmath.py."""
    return sorted([*(pkg / "search" / "core").glob("*.py"), *(pkg / "board").glob("*.py"), pkg / "fastmath.py"])


def sources_key(pkg: Path = PKG) -> str:
    """The compiled search's key: the code of `search_sources` and what they import (of lc0_rocm in
    folder `pkg`)."""
    return code_key(search_sources(pkg), pkg)


@functools.lru_cache(maxsize=None)
def _file_key(path: Path) -> str:
    return code_key([path])


def _base_dir() -> Path:
    base = os.environ.get("NUMBA_CACHE_DIR")
    if not base:
        root = os.environ.get("LC0_ROCM_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lc0-rocm")
        base = os.path.join(root, "numba")
    return Path(base)


@functools.lru_cache(maxsize=None)
def cache_dir() -> Path:
    """Where numba keeps the compiled search (created on first compile). Read once: the compiled
    functions' cache folders are fixed when they are declared, at import."""
    return _base_dir() / sources_key()


@functools.lru_cache(maxsize=None)
def target_key() -> str:
    """What numba's cache keys the machine code by, hashed: this Python, this numba and the CPU
    (`magic_tuple`: LLVM triple, CPU name, CPU features)."""
    from numba.core.registry import cpu_target

    magic = cpu_target.target_context.codegen().magic_tuple()
    text = repr((sys.version_info[:2], numba.__version__, magic))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ready_file() -> Path:
    """The marker of a cache that holds the whole search for this Python, numba and CPU; it lists
    the entry points (module, name, signature) to load."""
    return cache_dir() / f"ready-{target_key()}.pkl"


def is_compiled() -> bool:
    """Whether the compiled search is cached for these sources on this machine (a first start
    compiles it: see search/precompile.py)."""
    return ready_file().is_file()


def write_ready(entry_points: list) -> None:
    """Mark the cache complete: `entry_points` = [(module, function name, argument types)]."""
    path = ready_file()
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    tmp.write_bytes(pickle.dumps(entry_points))
    os.replace(tmp, path)  # readers never see half a file


def load_compiled() -> int:
    """Load every entry point listed by the ready marker from the cache (numba compiles any that is
    missing). Returns how many were loaded; 0 without a marker."""
    try:
        entries = pickle.loads(ready_file().read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return 0
    for module, name, args in entries:
        getattr(importlib.import_module(module), name).compile(args)
    return len(entries)


class _CodeLocator(caching._CacheLocator):
    """numba's cache locator for lc0_rocm's compiled functions (and the tests'): files in a folder
    named by the key of the code they may take from (see the module docstring), not by their install
    path, and that key as the freshness stamp. The file name is the function's module and name
    alone, without numba's line number, so an edit above a function leaves its entry in place."""

    def __init__(self, path: Path, key: str):
        self._path = str(path)
        self._key = key

    def get_cache_path(self):
        return self._path

    def get_source_stamp(self):
        return self._key

    def get_disambiguator(self):
        return "0"

    @classmethod
    def from_function(cls, py_func, py_file):
        f = Path(py_file).resolve()
        if not f.is_file():
            return None
        if f.parent in (SEARCH_CORE, BOARD) or f == FASTMATH:
            self = cls(cache_dir(), cache_dir().name)
        else:
            key = _file_key(f)
            self = cls(_base_dir() / key, key)
        try:
            self.ensure_cache_path()
        except OSError:  # an unwritable cache: numba tries its other locators
            return None
        return self


_impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
_impl._locator_classes = [_CodeLocator, *(c for c in _impl._locator_classes if c.__name__ != "_CodeLocator")]


def _call_type(t):
    """The type a compiled caller's argument is compiled for: a constant as its type (not its
    literal value), a signed integer narrower than 64 bits (a node read from an int32 array) as int64
    (numba's arithmetic widens it to int64 anyway); anything else as it is."""
    t = types.unliteral(t)
    if isinstance(t, types.Integer) and t.signed and t.bitwidth < 64:
        return types.int64
    return t


def _one_body_per_type(d):
    """`d` called from compiled code compiles one body per argument *kind*, not one per constant:
    numba types a constant argument as its literal (`f(a, 0)` and `f(a, 1)` are two signatures, each
    a whole compile of `f` and of what it calls with that constant), and a node index read from an
    int32 array apart from one computed in int64; the first start compiled 280 bodies of 163
    functions so. Its call template gets the arguments as `_call_type` says (a constant still folds
    where LLVM inlines the call; unsigned integers and floats keep their width)."""
    get_call_template = d.get_call_template

    def widened_call_template(args, kws):
        return get_call_template(tuple(_call_type(a) for a in args), {k: _call_type(v) for k, v in kws.items()})

    d.get_call_template = widened_call_template
    COMPILED.append(d)
    return d


def jit(fn=None, **options):
    """Compile `fn` with numba: no Python objects, GIL released, cached on disk, no allocation, no
    exception from arithmetic, one body per argument type (`_one_body_per_type`). `options` go to
    numba (e.g. `inline="always"`)."""
    if fn is None:
        return functools.partial(jit, **options)
    return _one_body_per_type(numba.njit(cache=True, nogil=True, _nrt=False, error_model="numpy", **options)(fn))


def jit_alloc(fn=None, **options):
    """`jit` for a function that allocates arrays."""
    if fn is None:
        return functools.partial(jit_alloc, **options)
    return _one_body_per_type(numba.njit(cache=True, nogil=True, error_model="numpy", **options)(fn))
