"""The wheel: built from the sources and installed alone into a fresh venv, it carries the default net
inside the package and runs `lc0-rocm eval` and the UCI engine (what a pip user gets).

The wheel is built from a copy of the packaged sources (pyproject.toml, README.md, lc0_rocm/,
weights/): building in the repo would write build/ and *.egg-info there and put whatever a stale
build/lib holds into the wheel. The venv sees the dependencies the tests run with, wherever they are
installed (the system, a venv, the user site): --system-site-packages, and a .pth file naming this
interpreter's site-packages folders (their own .pth files, such as the repo's editable install, are
not run). An editable install could still answer `import lc0_rocm`, so every run is checked to import
the venv's copy: a tmp cwd, no PYTHONPATH, no user site, and `lc0_rocm.__file__` asserted under the
venv. The compiled search is cached by the sources' hash, not their path: the venv's engine shares
the tests' cache (once an engine has compiled it, the wheel's engine compiles nothing).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import chess
import pytest

from netpaths import REPO
from uci_pipe import UciPipe

pytestmark = pytest.mark.slow

DEFAULT_NET = "bt-small-smolgen-pedense.pb.gz"


def _setuptools_builds_here() -> bool:
    """Whether the installed setuptools can build this project without build isolation (>= 77: the
    SPDX license string; its bdist_wheel needs no `wheel` package)."""
    try:
        return int(metadata.version("setuptools").split(".")[0]) >= 77
    except (metadata.PackageNotFoundError, ValueError):
        return False


def _pip_takes_python() -> bool:
    """Whether this pip installs into another environment (`--python`, pip >= 22.3)."""
    try:
        major, minor = (int(x) for x in metadata.version("pip").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (22, 3)


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "LC0_ROCM_WEIGHTS")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _our_site_folders() -> list[str]:
    """The site-packages folders this interpreter imports the dependencies from."""
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        folders.append(site.getusersitepackages())
    return [f for f in folders if os.path.isdir(f)]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, wheel path, env for running the venv's programs, a tmp cwd)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for lic in REPO.glob("LICEN[CS]E*"):
        shutil.copy2(lic, src / lic.name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "lc0_rocm", src / "lc0_rocm", ignore=ignore)
    shutil.copytree(REPO / "weights", src / "weights", ignore=ignore)

    dist = tmp / "dist"
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-w", str(dist)]
    if _setuptools_builds_here():
        cmd.insert(4, "--no-build-isolation")
    # else pip fetches setuptools into an isolated build env, as `pip install -e .` does
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    wheel, = dist.glob("lc0_rocm-*.whl")

    venv = tmp / "venv"
    # no pip of its own (ensurepip takes half a minute on two busy cores): this pip installs into it
    own_pip = not _pip_takes_python()
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv),
                        *([] if own_pip else ["--without-pip"])], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    env = _clean_env()
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, env=env, check=True).stdout.strip()
    (Path(purelib) / "lc0_rocm_test_deps.pth").write_text("".join(f"{f}\n" for f in _our_site_folders()))
    cwd = tmp / "cwd"
    cwd.mkdir()
    pip = [str(venv / "bin" / "python"), "-m", "pip"] if own_pip else \
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    r = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--force-reinstall", str(wheel)],
                       capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return venv, wheel, env, cwd


def test_wheel_holds_the_default_net_and_every_module(installed):
    _, wheel, _, _ = installed
    with zipfile.ZipFile(wheel) as z:
        sizes = {i.filename: i.file_size for i in z.infolist()}
    assert f"lc0_rocm/weights/{DEFAULT_NET}" in sizes
    assert sizes[f"lc0_rocm/weights/{DEFAULT_NET}"] == (REPO / "weights" / DEFAULT_NET).stat().st_size
    assert [n for n in sizes if n.endswith(".pb.gz")] == [f"lc0_rocm/weights/{DEFAULT_NET}"]
    assert not [n for n in sizes if n.startswith("lc0_rocm-0") and ".data/" in n]  # no data-files
    big = {n: s for n, s in sizes.items() if s > 200_000 and not n.endswith(DEFAULT_NET)}
    assert not big, big
    # every module and kernel source of the package (pyproject.toml lists the subpackages by hand)
    ours = {p.relative_to(REPO).as_posix() for p in (REPO / "lc0_rocm").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".hip", ".h")}
    assert ours - set(sizes) == set()


def test_installed_wheel_evaluates_like_the_repo(installed):
    venv, _, env, cwd = installed
    py = str(venv / "bin" / "python")
    r = subprocess.run([py, "-c", "import lc0_rocm, lc0_rocm.default_net as d; "
                        "print(lc0_rocm.__file__); print(d.default_net_path())"],
                       capture_output=True, text=True, cwd=cwd, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    module, net = map(Path, r.stdout.split("\n")[:2])
    site = Path(subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, env=env, check=True).stdout.strip())
    assert module == site / "lc0_rocm" / "__init__.py", (module, site)  # the wheel's, not the repo's
    assert net == site / "lc0_rocm" / "weights" / DEFAULT_NET and net.is_file()

    r = subprocess.run([str(venv / "bin" / "lc0-rocm"), "eval", "--json", "--backend", "cpu"],
                       capture_output=True, text=True, cwd=cwd, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    legal = {m.uci() for m in chess.Board().legal_moves}
    assert len(legal) == 20 and set(got["policy"]) == legal
    assert abs(sum(got["policy"].values()) - 1) < 1e-5
    assert abs(sum(got["wdl"]) - 1) < 1e-5

    r = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "eval", "--json", "--backend", "cpu"],
                       capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    assert got == json.loads(r.stdout)


def test_installed_wheel_plays_uci(installed):
    from lc0_rocm.jit import is_compiled

    venv, _, env, cwd = installed
    compiled = is_compiled()
    eng = UciPipe([str(venv / "bin" / "lc0-rocm")], env=env, cwd=cwd)
    try:
        eng.send("uci")
        eng.until("uciok", 60)
        eng.send("isready")
        eng.until("readyok", 60)  # a cold cache compiles the search in the background
        eng.send("position startpos")
        best = eng.answer("go nodes 1", 600)[-1].split()[1]  # waits for a cold cache's compile
        assert chess.Move.from_uci(best) in chess.Board().legal_moves
        eng.send("quit")
        assert eng.p.wait(timeout=30) == 0
        if compiled:  # the tests' cache serves the wheel's copy of the sources
            assert "compiling the search" not in eng.p.stderr.read()
    finally:
        if eng.p.poll() is None:
            eng.p.kill()
            eng.p.wait()
