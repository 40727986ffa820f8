"""The HIP-on-CUDA layer without a GPU: it builds, exports every HIP function lc0_rocm calls, and
hip-python loads it and gets translated HIP errors back.

Needs a C compiler and the CUDA headers + libcudart (nvcc's toolkit); skips where they are missing.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("hip_on_cuda_build", ROOT / "hip_on_cuda" / "build.py")
hoc_build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hoc_build)

# hip-python looks these up under other names than the Python function's.
C_SYMBOL = {"hipGetDeviceProperties": "hipGetDevicePropertiesR0600"}
LIBRARY = {"hip_call": "libamdhip64.so", "rtc_call": "libhiprtc.so", "rtc_status": "libhiprtc.so",
           "lt_call": "libhipblaslt.so"}


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> Path:
    try:
        cuda = hoc_build.find_cuda(None)
    except hoc_build.BuildError as e:
        pytest.skip(str(e))
    out = tmp_path_factory.mktemp("hoc")
    hoc_build.build(out, cuda)
    return out


def _calls_in_package() -> set[tuple[str, str]]:
    """(library, function) for every hip_call/rtc_call/rtc_status/lt_call("name", ...) in lc0_rocm."""
    found = set()
    for path in (ROOT / "lc0_rocm").rglob("*.py"):
        for helper, name in re.findall(r'\b(hip_call|rtc_call|rtc_status|lt_call)\(\s*"(\w+)"', path.read_text()):
            found.add((LIBRARY[helper], C_SYMBOL.get(name, name)))
    return found


def test_layer_exports_every_hip_function_the_package_calls(libs):
    calls = _calls_in_package()
    assert {lib for lib, _ in calls} == set(LIBRARY.values()), "a library has no calls: pattern broken?"
    missing = []
    for lib, name in sorted(calls):
        handle = ctypes.CDLL(str(libs / lib))
        if not hasattr(handle, name):
            missing.append(f"{lib}:{name}")
    assert not missing, f"hip_on_cuda lacks functions lc0_rocm calls: {missing}"


def test_hip_python_loads_the_layer_and_gets_hip_errors(libs):
    pytest.importorskip("hip")
    code = (
        "from hip import hip, hiprtc, hipblaslt\n"
        "status, n = hip.hipGetDeviceCount()\n"
        "print(status.name, n)\n"
        "print(hip.hipGetErrorName(hip.hipError_t.hipErrorInvalidDevice)[1])\n"
        "print([l.split()[-1] for l in open('/proc/self/maps') if 'libamdhip64' in l][0])\n"
    )
    env = dict(os.environ, LD_LIBRARY_PATH=str(libs), CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    status_line, name_line, lib_line = proc.stdout.split("\n")[:3]
    # no GPU here: CUDA says "no driver" or "no device"; the layer must hand back the HIP name for it
    assert status_line.split()[0] in {"hipErrorInsufficientDriver", "hipErrorNoDevice"}, proc.stdout
    assert name_line == "hipErrorInvalidDevice"
    assert lib_line.startswith(str(libs)), f"hip-python loaded {lib_line}, not the layer"


def test_hip_abi_header_matches_hip_python():
    pytest.importorskip("hip")
    proc = subprocess.run([sys.executable, str(ROOT / "hip_on_cuda" / "gen_hip_abi.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_build_tool_reports_a_bad_toolkit(tmp_path, capsys):
    assert hoc_build.main(["--cuda", str(tmp_path), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("hip_on_cuda/build.py: error: ") and err.count("\n") == 1, err
