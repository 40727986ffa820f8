"""The AMD compile gate: every kernel compiles with hipcc for gfx90a (wave64) and gfx1030 (wave32),
through the NVRTC prelude with nvcc, the HIP-on-CUDA C sources compile, and with clang-19 for gfx942,
gfx1100, gfx1151 and gfx1201 every kernel in every variant the runtime compiles has no spill, no scratch,
LDS within limits, and docs/amd-resources.md is current (tools/amd_resources.py --check).

Runs tools/amd_compile_gate.sh (started beside the other tests: tests/gate_background.py). Where hipcc, nvcc or clang-19 is missing the test skips, except in CI
(CI=true), where a missing compiler is a failure: CI installs them. The other tests here need no compiler:
they keep tools/amd_resources.py's list of compile variants in step with the runtime.
"""

import ast
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path

import pytest

import gate_background

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "lc0_rocm" / "kernels"


def _tool():
    """tools/amd_resources.py as a module (registered in sys.modules: its dataclasses need that)."""
    name = "lc0_tools_amd_resources"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / "amd_resources.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def test_every_kernel_compiles_for_amd_and_through_the_nvrtc_prelude():
    missing = [tool for tool in gate_background.COMPILERS if shutil.which(tool) is None]
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must have {missing} for the compile gate (.ci/run installs them)")
        pytest.skip(f"{missing} not installed")
    assert gate_background.GATE.exists(), "tools/amd_compile_gate.sh is missing"
    kernels = sorted(KERNELS.glob("*.hip"))
    assert kernels, "no kernels found"
    returncode, stdout, stderr = gate_background.result(timeout=1200)
    assert returncode == 0, stdout[-6000:] + stderr[-4000:]
    for k in kernels:
        assert k.name in stdout, f"gate did not report {k.name}"
    assert "ok   clang-19 gfx942 gfx1100 gfx1151 gfx1201" in stdout, stdout[-3000:]


# ---------------------------------------------------------------------- the runtime's own tables
# The one place this file imports the runtime (the gpu/ refactor may move it): the largest head depth
# NnKernels.mha accepts. attention.hip is compiled with -DMHA_DEPTH=d_model/heads for 1..MAX_MHA_DEPTH.
from lc0_rocm.gpu.nn.kernels import ACT_CODES, CONV_ACTS  # noqa: E402
from lc0_rocm.gpu.nn.kernels import MAX_MHA_DEPTH as RUNTIME_MAX_MHA_DEPTH  # noqa: E402

RUNTIME_SOURCES = ROOT / "lc0_rocm"  # every Python file here is scanned for the "-D..." options it passes
# ----------------------------------------------------------------------------------------------------


def _runtime_defines() -> set[tuple[str, str]]:
    """{(kernel file, define name)} for every "-DNAME..." string literal (f-strings too) in lc0_rocm's
    Python, with the kernel file named by a "*.hip" literal among the same call's arguments."""
    found = set()
    for path in RUNTIME_SOURCES.rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
            files = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
                     and a.value.endswith(".hip")]
            for arg in call.args + [k.value for k in call.keywords]:
                for node in ast.walk(arg):
                    head = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
                    if isinstance(head, ast.Constant) and isinstance(head.value, str):
                        m = re.match(r"-D(\w+)", head.value)
                        if m:
                            assert files, f"{path}: {head.value!r} passed with no kernel file in the call"
                            found.update((f, m.group(1)) for f in files)
    return found


def test_compile_variants_cover_every_define_the_runtime_passes():
    tool = _tool()
    defines = {(f, name) for f, (name, _) in tool.DEFINE_VARIANTS.items()}
    assert _runtime_defines() == defines, (
        "the runtime compiles kernels with other -D options than tools/amd_resources.py's DEFINE_VARIANTS")


def test_compile_variants_cover_every_head_depth():
    tool = _tool()
    name, depths = tool.DEFINE_VARIANTS["attention.hip"]
    assert name == "MHA_DEPTH"
    assert list(depths) == list(range(1, RUNTIME_MAX_MHA_DEPTH + 1))
    m = re.search(r"static_assert\(MHA_DEPTH >= (\d+) && MHA_DEPTH <= (\d+)", (KERNELS / "attention.hip").read_text())
    assert m and (int(m.group(1)), int(m.group(2))) == (1, RUNTIME_MAX_MHA_DEPTH)
    variants = tool.compile_variants()
    assert {f for f, _ in variants} == {p.name for p in KERNELS.glob("*.hip")}
    for conv in ("conv.hip", "conv_small.hip"):  # the two files the runtime compiles once per activation
        acts = tool.DEFINE_VARIANTS[conv]
        assert acts[0] == "CONV_ACT" and list(acts[1]) == sorted(ACT_CODES[a] for a in CONV_ACTS)
    assert len(variants) == len(list(KERNELS.glob("*.hip"))) - 3 + RUNTIME_MAX_MHA_DEPTH + 2 * len(CONV_ACTS)


def test_waves_per_simd_formula():
    tool = _tool()
    archs = {a.name: a for a in tool.ARCHS}

    def waves(arch, vgprs, sgprs=16, lds=0, wg=256):
        k = tool.KernelInfo("f", "", arch, "k", {"vgpr_count": str(vgprs), "sgpr_count": str(sgprs),
                                                  "group_segment_fixed_size": str(lds),
                                                  "max_flat_workgroup_size": str(wg)})
        return k.waves(archs[arch])[0]

    # LLVM's steps: gfx942 512 registers per lane in granules of 8, at most 8 waves; RDNA3/3.5/4 (full
    # VGPR file) 1536 in granules of 24, at most 16 waves
    assert [waves("gfx942", v) for v in (64, 65, 128, 129, 256, 512)] == [8, 7, 4, 3, 2, 1]
    assert [waves("gfx1151", v) for v in (96, 97, 121, 128, 256)] == [16, 12, 10, 10, 5]
    assert waves("gfx942", 32, sgprs=102) == 7
    assert waves("gfx1201", 32, sgprs=102) == 16
    # 26 KiB of LDS, 128 threads: 2 groups per gfx942 CU (4 waves over 4 SIMDs), 4 per RDNA WGP (4 waves32 each)
    assert waves("gfx942", 32, lds=26624, wg=128) == 1
    assert waves("gfx1100", 32, lds=26624, wg=128) == 4


def test_resource_doc_lists_every_kernel_file_and_head_depth():
    text = (ROOT / "docs" / "amd-resources.md").read_text()
    for p in KERNELS.glob("*.hip"):
        assert f"| {p.name} |" in text, f"docs/amd-resources.md lacks {p.name}: run python3 tools/amd_resources.py"
    for d in range(1, RUNTIME_MAX_MHA_DEPTH + 1):
        assert f"| MHA_DEPTH={d} |" in text, f"docs/amd-resources.md lacks head depth {d}"
