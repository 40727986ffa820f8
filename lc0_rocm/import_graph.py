"""Which modules of lc0_rocm a source file imports, read from its syntax tree (nothing is imported).

The one resolver for the two readers of lc0_rocm's import graph: the compiled code's cache key
(lc0_rocm/jit.py hashes a compiled module and every module it takes code from) and the layering test
(tests/test_layering.py: imports only look down, no circles). Module names are lc0_rocm-relative and
dotted (`search.core.cycle`); the package itself is `__init__`. Every import statement counts, those
inside functions too. This module imports nothing (numba included), so the layering test runs where
numba is not installed.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

PKG = Path(__file__).resolve().parent


def module_name(path: Path, pkg: Path = PKG) -> str:
    """The dotted name of the module in file `path` (a package's `__init__.py` is the package; the
    top one is `__init__`)."""
    parts = list(Path(path).resolve().relative_to(pkg).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def module_file(name: str, pkg: Path = PKG) -> Optional[Path]:
    """The file of module `name` (`__init__`: the package's own), or None where there is none."""
    if name == "__init__":
        return pkg / "__init__.py"
    p = pkg.joinpath(*name.split("."))
    if p.with_suffix(".py").is_file():
        return p.with_suffix(".py")
    return p / "__init__.py" if (p / "__init__.py").is_file() else None


def imports_in(source: str, package: str, pkg: Path = PKG) -> set[str]:
    """The modules that `source`, a module of package `package` ('' for lc0_rocm itself), imports;
    `import lc0_rocm`, `from lc0_rocm import x` and `from . import x` at the top (x not a module) are
    the package itself, `__init__`."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name[len("lc0_rocm."):] or "__init__" for a in node.names
                    if a.name == "lc0_rocm" or a.name.startswith("lc0_rocm.")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module == "lc0_rocm" or (node.module or "").startswith("lc0_rocm."):
                target = node.module[len("lc0_rocm."):] if node.module != "lc0_rocm" else ""
            else:
                continue
            for a in node.names:  # `from . import rules` imports a module, `from .tree import WIN` a name
                sub = f"{target}.{a.name}" if target else a.name
                out.add(sub if module_file(sub, pkg) is not None else target or "__init__")
    return out


def imports_of(path: Path, pkg: Path = PKG) -> set[str]:
    """The modules that the module in file `path` imports (`imports_in` of its source)."""
    path = Path(path)
    package = ".".join(path.resolve().relative_to(pkg).parent.parts)
    return imports_in(path.read_text(), package, pkg)
