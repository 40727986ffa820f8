#!/usr/bin/env python3
"""Register, LDS and occupancy report of every lc0-rocm kernel for today's AMD cards, from clang-19's ISA.

Compiles every lc0_rocm/kernels/*.hip, in every variant the runtime can ask hipRTC for (COMPILE_VARIANTS
below: attention.hip once per head depth), to device-only assembly with clang-19 for gfx942 (MI300,
wave64), gfx1100 (RDNA3), gfx1151 (RDNA3.5 APU, Radeon 8060S) and gfx1201 (RDNA4), both wave32; reads
per kernel the AMDGPU metadata (.vgpr_count, .agpr_count, .sgpr_count, spills, LDS, scratch, wave size);
computes the waves per SIMD; writes docs/amd-resources.md.

    python3 tools/amd_resources.py            # compile, write docs/amd-resources.md, exit 1 on offenders
    python3 tools/amd_resources.py --check    # compile, write nothing; exit 1 on offenders or a stale doc

Offenders (one line each, exit status 1): any VGPR or SGPR spill, scratch (private segment) use or a
dynamic stack, LDS over the arch's per-workgroup limit; a compile failure. CLANG overrides the compiler
(default clang++-19), -j the parallel jobs (default 2). Needs clang-19, the HIP headers of libamdhip64-dev
and the device libraries of rocm-device-libs (no GPU).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL_DIR = ROOT / "lc0_rocm" / "kernels"
DOC = ROOT / "docs" / "amd-resources.md"

# ----------------------------------------------------------------------------------------------------
# The compile variants: every (file, -D options) the runtime hands hipRTC. The runtime compiles every
# kernels/*.hip without options (each module holds both dtypes, _f16 and _f32, and every activation: they
# are separate extern "C" kernels or run-time arguments, not defines), except attention.hip, compiled
# once per head depth with -DMHA_DEPTH=<d_model / heads> for 1 <= depth <= MAX_MHA_DEPTH
# (lc0_rocm/gpu/nn/kernels.py: NnKernels.mha). tests/test_compile_gate.py checks these two tables
# against the runtime (MAX_MHA_DEPTH and every "-D..." string in lc0_rocm's Python).
MAX_MHA_DEPTH = 64
# conv.hip and conv_small.hip: once per activation a classical tower can have, -DCONV_ACT=<LC0_ACT_* code>
# of none, relu and mish (lc0_rocm/gpu/nn/kernels.py CONV_ACTS)
DEFINE_VARIANTS: dict[str, tuple] = {"attention.hip": ("MHA_DEPTH", range(1, MAX_MHA_DEPTH + 1)),
                                 "conv.hip": ("CONV_ACT", (0, 1, 3)),
                                 "conv_small.hip": ("CONV_ACT", (0, 1, 3))}


def compile_variants(kernel_dir: Path = KERNEL_DIR) -> list[tuple[str, tuple[str, ...]]]:
    """[(file name, options)] of every module the runtime can request."""
    out = []
    for path in sorted(kernel_dir.glob("*.hip")):
        if path.name in DEFINE_VARIANTS:
            name, values = DEFINE_VARIANTS[path.name]
            out.extend((path.name, (f"-D{name}={v}",)) for v in values)
        else:
            out.append((path.name, ()))
    return out


# ----------------------------------------------------------------------------------------------------
# The archs. Sources (docs/amd-resources.md cites them):
#  - VGPR file per SIMD, allocation granule, max waves per SIMD: LLVM AMDGPUBaseInfo.cpp
#    (getTotalNumVGPRs, getVGPRAllocGranule, getMaxWavesPerEU): gfx90a/gfx942 512 VGPRs+AGPRs per lane,
#    granule 8, 8 waves; GFX11 parts with FeatureGFX11FullVGPRs (gfx1100, gfx1101, gfx1151) and GFX12
#    (gfx1200, gfx1201): 1536 wave32 VGPRs per SIMD (192 KiB), granule 24, 16 waves. ROCt/hsakmt's
#    VGPR size per CU agrees: 512 KiB for MI200/MI300 (4 SIMDs), 384 KiB for gfx1100/1101/1200/1201
#    (a CU of 2 SIMDs).
#  - SGPRs: GFX9 (gfx942) 800 per SIMD, occupancy steps of AMDGPUBaseInfo getOccupancyWithNumSGPRs
#    (<= 80: 10, <= 88: 9, <= 100: 8, else 7 waves); GFX10+ give every wave its own SGPRs (no limit).
#  - LDS: 64 KiB per workgroup on all four (AMDGPUUsage, getAddressableLocalMemorySize); 64 KiB per CU
#    of 4 SIMDs on CDNA3, 128 KiB per WGP of 4 SIMD32s on RDNA3/3.5/4 (HIP's default WGP mode).
@dataclass(frozen=True)
class Arch:
    name: str
    what: str
    wave: int
    vgprs_per_simd: int  # per lane, as the arch counts them for its wave size (gfx942: VGPRs + AGPRs)
    vgpr_granule: int
    max_waves: int  # per SIMD
    sgpr_limited: bool
    lds_per_workgroup: int
    lds_per_unit: int  # per CU (CDNA) or WGP (RDNA)
    simds_per_unit: int


ARCHS = (
    Arch("gfx942", "CDNA3 (MI300), wave64", 64, 512, 8, 8, True, 65536, 65536, 4),
    Arch("gfx1100", "RDNA3 (RX 7900), wave32", 32, 1536, 24, 16, False, 65536, 131072, 4),
    Arch("gfx1151", "RDNA3.5 APU (Radeon 8060S), wave32", 32, 1536, 24, 16, False, 65536, 131072, 4),
    Arch("gfx1201", "RDNA4 (RX 9070), wave32", 32, 1536, 24, 16, False, 65536, 131072, 4),
)
CLANG_FLAGS = ("-x", "hip", "--cuda-device-only", "-O3", "-S", "-Werror")
# ROCm device libraries (ockl, ocml: Debian's rocm-device-libs, 5.2). They must be linked: HIP 5.2's headers
# read threadIdx/blockDim through __ockl_* and the math goes through __ocml_*; with -nogpulib those stay
# external calls, and a kernel with a call gets the calling convention's register use and a dynamic stack
# instead of its own. 5.2 lacks oclc_isa_version_<arch>.bc for these archs: compile_all generates them
# (one constant, __oclc_ISA_version = major*1000 + minor*100 + stepping) next to links to the others.
DEVICE_LIBS = Path(os.environ.get("ROCM_DEVICE_LIBS", "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"))
ISA_VERSIONS = {"gfx942": 9402, "gfx1100": 11000, "gfx1151": 11501, "gfx1201": 12001}


def _ceil_to(x: int, m: int) -> int:
    return -(-x // m) * m


def sgpr_waves(sgprs: int) -> int:
    """GFX9 waves per SIMD for a wave's SGPR count (AMDGPUBaseInfo getOccupancyWithNumSGPRs, VI+)."""
    return 10 if sgprs <= 80 else 9 if sgprs <= 88 else 8 if sgprs <= 100 else 7


def _field(key: str) -> property:
    """A KernelInfo property: the metadata field `key` as an int (KernelInfo.i)."""
    return property(lambda self: self.i(key))


@dataclass
class KernelInfo:
    file: str
    variant: str
    arch: str
    name: str
    meta: dict = field(default_factory=dict)
    llvm_occupancy: int | None = None

    def i(self, key: str) -> int:
        v = self.meta.get(key, "0")
        return 1 if v == "true" else 0 if v == "false" else int(v)

    vgprs = _field("vgpr_count")  # gfx942: arch VGPRs (rounded to 4) + AGPRs, as .vgpr_count reports it
    agprs = _field("agpr_count")
    sgprs = _field("sgpr_count")
    lds = _field("group_segment_fixed_size")
    scratch = _field("private_segment_fixed_size")

    @property
    def workgroup(self) -> int:
        return self.i("max_flat_workgroup_size") or 1024

    def waves(self, arch: Arch) -> tuple[int, str]:
        """(waves per SIMD, what limits it: V = VGPRs, S = SGPRs, L = LDS, '' = the SIMD's maximum)."""
        v = self.vgprs
        by = {"V": arch.max_waves if v < arch.vgpr_granule
              else min(arch.max_waves, arch.vgprs_per_simd // _ceil_to(v, arch.vgpr_granule))}
        if arch.sgpr_limited:
            by["S"] = min(arch.max_waves, sgpr_waves(self.sgprs))
        if self.lds:
            groups = arch.lds_per_unit // self.lds
            per_group = -(-self.workgroup // arch.wave)
            by["L"] = min(arch.max_waves, -(-groups * per_group // arch.simds_per_unit)) if groups else 0
        w = min(by.values())
        limit = "".join(k for k, n in by.items() if n == w) if w < arch.max_waves else ""
        return w, limit

    def offences(self, arch: Arch) -> list[str]:
        where = f"{self.arch} {self.file} {self.variant or '(no defines)'} {self.name}"
        out = []
        if self.i("vgpr_spill_count"):
            out.append(f"{where}: spills {self.i('vgpr_spill_count')} VGPRs")
        if self.i("sgpr_spill_count"):
            out.append(f"{where}: spills {self.i('sgpr_spill_count')} SGPRs")
        if self.scratch:
            out.append(f"{where}: uses {self.scratch} bytes of scratch per lane")
        if self.i("uses_dynamic_stack"):
            out.append(f"{where}: uses a dynamic stack")
        if self.lds > arch.lds_per_workgroup:
            out.append(f"{where}: {self.lds} bytes of LDS > {arch.lds_per_workgroup}")
        return out


_KERNEL_START = re.compile(r"^  - \.(\w+):\s*(.*)$")
_KERNEL_FIELD = re.compile(r"^    \.(\w+):\s*(.*)$")


def parse_assembly(text: str) -> dict[str, tuple[dict, int | None]]:
    """{kernel name: (metadata fields, LLVM's own occupancy estimate)} from clang's AMDGPU assembly."""
    occupancy: dict[str, int] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("\t.size\t"):
            current = line.split("\t")[2].split(",")[0]
        elif line.startswith("; Occupancy: ") and current:
            occupancy[current] = int(line.split(":")[1])
    start = text.find(".amdgpu_metadata")
    end = text.find(".end_amdgpu_metadata", start)
    if start < 0 or end < 0:
        raise ValueError("no .amdgpu_metadata block in the assembly")
    kernels, meta = [], None
    for line in text[start:end].splitlines():
        m = _KERNEL_START.match(line)
        if m:
            meta = {}
            kernels.append(meta)
        else:
            m = _KERNEL_FIELD.match(line)
        if m and meta is not None:
            meta[m.group(1)] = m.group(2).strip().strip("'\"")
    return {k["name"]: (k, occupancy.get(k["name"])) for k in kernels if "name" in k}


def clang_command(clang: str, arch: str, file: str, options: tuple[str, ...], out: Path, libs: Path,
                  pch: Path | None = None) -> list[str]:
    """clang's command for one kernel file and variant; with `pch`, the HIP headers come precompiled."""
    pre = ["-Xclang", "-include-pch", "-Xclang", str(pch)] if pch else []
    return [clang, *CLANG_FLAGS, f"--offload-arch={arch}", f"--rocm-device-lib-path={libs}", *pre, *options,
            str(KERNEL_DIR / file), "-o", str(out)]


def header_pch(clang: str, arch: str, libs: Path, tmp: Path) -> Path | None:
    """The HIP runtime headers (2 MB of text, two thirds of a small kernel's compile time) precompiled
    once per arch, or None where clang cannot (then every compile parses them itself). The kernels'
    own `#include <hip/hip_runtime.h>` finds them already read; the assembly is the same. The headers'
    pending template instantiations are done once here (-fpch-instantiate-templates), not in every
    compile: loading the header then takes 0.05 s instead of 0.17 s."""
    header, pch = tmp / f"hip_headers.{arch}.h", tmp / f"hip_headers.{arch}.pch"
    header.write_text("#include <hip/hip_runtime.h>\n")
    p = subprocess.run([clang, *CLANG_FLAGS, f"--offload-arch={arch}", f"--rocm-device-lib-path={libs}",
                        "-Xclang", "-emit-pch", "-fpch-instantiate-templates", str(header), "-o", str(pch)],
                       capture_output=True, text=True)
    return pch if p.returncode == 0 and pch.exists() else None


def device_lib_dir(clang: str, tmp: Path, archs=ARCHS) -> Path:
    """A folder with the system's device-library bitcode plus oclc_isa_version_<arch>.bc where missing."""
    if not (DEVICE_LIBS / "ocml.bc").exists():
        raise FileNotFoundError(f"no ROCm device libraries in {DEVICE_LIBS} (apt-get install rocm-device-libs; "
                                f"ROCM_DEVICE_LIBS overrides the folder)")
    libs = tmp / "device-libs"
    libs.mkdir()
    for bc in DEVICE_LIBS.glob("*.bc"):
        (libs / bc.name).symlink_to(bc)
    for a in archs:
        bc = libs / f"oclc_isa_version_{a.name[3:]}.bc"
        if not bc.exists():
            ll = tmp / f"{bc.stem}.ll"
            ll.write_text('target triple = "amdgcn-amd-amdhsa"\n@__oclc_ISA_version = linkonce_odr protected '
                          f'local_unnamed_addr addrspace(4) constant i32 {ISA_VERSIONS[a.name]}, align 4\n')
            subprocess.run([clang, "-x", "ir", "-target", "amdgcn-amd-amdhsa", "-nogpulib", "-c", "-emit-llvm",
                            str(ll), "-o", str(bc)], check=True, capture_output=True)
    return libs


def compile_all(clang: str, jobs: int, archs=ARCHS, variants=None):
    """([KernelInfo], [compile failure lines])."""
    variants = compile_variants() if variants is None else variants
    work = [(a, f, o) for a in archs for f, o in variants]
    with tempfile.TemporaryDirectory(prefix="amd_resources.") as tmp:
        libs = device_lib_dir(clang, Path(tmp), archs)
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            made = pool.map(lambda a: header_pch(clang, a.name, libs, Path(tmp)), archs)
            pchs = dict(zip((a.name for a in archs), made))

        def one(item):
            arch, file, options = item
            out = Path(tmp) / f"{file}.{arch.name}.{'_'.join(o.lstrip('-') for o in options)}.s"
            cmd = clang_command(clang, arch.name, file, options, out, libs, pchs[arch.name])
            p = subprocess.run(cmd, capture_output=True,
                               text=True, cwd=KERNEL_DIR)
            if p.returncode != 0:
                return item, None, p.stderr
            text = out.read_text()
            out.unlink()
            return item, parse_assembly(text), None

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(one, work))
    infos, failures = [], []
    for (arch, file, options), parsed, err in results:
        variant = " ".join(options)
        if parsed is None:
            head = "\n".join(err.strip().splitlines()[:20])
            failures.append(f"{arch.name} {file} {variant or '(no defines)'}: clang failed\n{head}")
            continue
        for name, (meta, occ) in sorted(parsed.items()):
            infos.append(KernelInfo(file, variant, arch.name, name, meta, occ))
    return infos, failures


def clang_version(clang: str) -> str:
    return subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.splitlines()[0].strip()


def render(infos: list[KernelInfo], version: str) -> str:
    archs = {a.name: a for a in ARCHS}
    lines = [
        "# AMD kernel resources",
        "",
        "Generated by `tools/amd_resources.py` (do not edit; regenerate with `python3 tools/amd_resources.py`;",
        "the compile gate, `tools/amd_compile_gate.sh`, runs it with `--check` and fails when this file is stale).",
        "",
        f"Every kernel of `lc0_rocm/kernels/*.hip`, in every variant the runtime compiles (attention.hip once per "
        f"head depth 1..{MAX_MHA_DEPTH}, `-DMHA_DEPTH`; conv.hip and conv_small.hip once per tower activation, `-DCONV_ACT`; the "
        f"other files without defines; each module holds the "
        f"`_f16` and `_f32` kernels), compiled to ISA by {version} "
        f"(`clang++-19 {' '.join(CLANG_FLAGS)} --offload-arch=<arch>`, hipRTC's defaults: wave64 on CDNA, "
        "wave32 on RDNA) for:",
        "",
        "| arch | what | wave | VGPRs per SIMD (per lane) | VGPR granule | max waves/SIMD | LDS per workgroup | "
        "LDS per CU/WGP (SIMDs) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for a in ARCHS:
        unit = "CU" if a.wave == 64 else "WGP"
        lines.append(f"| {a.name} | {a.what} | {a.wave} | {a.vgprs_per_simd}"
                     f"{' (VGPRs + AGPRs)' if a.name == 'gfx942' else ''} | {a.vgpr_granule} | {a.max_waves} | "
                     f"{a.lds_per_workgroup // 1024} KiB | {a.lds_per_unit // 1024} KiB per {unit} "
                     f"({a.simds_per_unit}) |")
    lines += [
        "",
        "Columns: VGPR is `.vgpr_count` (on gfx942 the unified count: architectural VGPRs rounded up to 4 plus",
        "AGPRs; AGPR is `.agpr_count`), SGPR `.sgpr_count` (with VCC, flat scratch and XNACK), LDS",
        "`.group_segment_fixed_size` (static `__shared__` only: `layernorm_{f16,f32}` adds C * 4 bytes of",
        "dynamic shared memory at launch), scratch `.private_segment_fixed_size` per lane, spills",
        "`.vgpr_spill_count` + `.sgpr_spill_count`. The gate fails on any spill, any scratch or dynamic stack,",
        "and LDS over the per-workgroup limit; so spills and scratch are 0 in every row below.",
        "",
        "Waves per SIMD = min(V, S, L), the letters after the number name the limit (none: the SIMD's maximum):",
        "",
        "- V = min(max waves, VGPRs per SIMD // roundup(VGPR, granule)) (max waves if VGPR < granule);",
        "- S (gfx942 only; GFX10+ give each wave its own SGPRs) = 10 / 9 / 8 / 7 waves for",
        "  SGPR <= 80 / 88 / 100 / more, capped at max waves;",
        "- L (kernels with LDS) = min(max waves, ceil(floor(LDS per CU/WGP / LDS) * ceil(workgroup / wave) /",
        "  SIMDs per CU/WGP)), workgroup = `.max_flat_workgroup_size` (the `__launch_bounds__`, else 1024).",
        "",
        "The last column, llc, is LLVM's own occupancy estimate (the `; Occupancy:` remark in the assembly);",
        "the tool prints a warning wherever it differs from waves/SIMD.",
        "",
        "Sources: LLVM `AMDGPUBaseInfo.cpp` (getTotalNumVGPRs, getVGPRAllocGranule, getMaxWavesPerEU,",
        "getOccupancyWithNumSGPRs; `FeatureGFX11FullVGPRs` on gfx1100/gfx1101/gfx1151 and GFX12: 192 KiB of",
        "VGPRs per SIMD), ROCt/hsakmt `hsakmt_get_vgpr_size_per_cu` (512 KiB per CU on MI200/MI300, 384 KiB",
        "on gfx1100/gfx1101/gfx1200/gfx1201), LLVM AMDGPUUsage (64 KiB LDS per workgroup), the RDNA3 ISA",
        "guide (128 KiB LDS per WGP).",
        "",
    ]
    by_arch: dict[str, list[KernelInfo]] = {}
    for k in infos:
        by_arch.setdefault(k.arch, []).append(k)

    def variant_key(k: KernelInfo):
        m = re.search(r"=(\d+)$", k.variant)
        return (k.file, k.name.rsplit("_", 1)[0], int(m.group(1)) if m else -1, k.name)

    for name, ks in by_arch.items():
        a = archs[name]
        lines += [f"## {name} — {a.what}", "",
                  "| file | kernel | variant | VGPR | AGPR | SGPR | spills | LDS bytes | scratch | waves/SIMD | llc |",
                  "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for k in sorted(ks, key=variant_key):
            w, lim = k.waves(a)
            spills = k.i("vgpr_spill_count") + k.i("sgpr_spill_count")
            llc = "?" if k.llvm_occupancy is None else k.llvm_occupancy
            lines.append(f"| {k.file} | {k.name} | {k.variant.removeprefix('-D') or '-'} | {k.vgprs} | "
                         f"{k.agprs if name == 'gfx942' else '-'} | {k.sgprs} | {spills} | {k.lds} | {k.scratch} | "
                         f"{w}{(' ' + lim) if lim else ''} | {llc} |")
        lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; fail on offenders or a stale doc")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--doc", type=Path, default=DOC)
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # killed: still remove the temporary folder
    clang = os.environ.get("CLANG", "clang++-19")
    if shutil.which(clang) is None:
        print(f"FAIL {clang} not found (apt-get install clang-19 lld-19)")
        return 1
    infos, failures = compile_all(clang, args.jobs)
    archs = {a.name: a for a in ARCHS}
    offenders = [o for k in infos for o in k.offences(archs[k.arch])]
    for line in failures + offenders:
        print(f"FAIL {line}")
    for k in infos:
        w = k.waves(archs[k.arch])[0]
        if k.llvm_occupancy is not None and k.llvm_occupancy != w:
            print(f"warn {k.arch} {k.file} {k.variant} {k.name}: {w} waves/SIMD, LLVM says {k.llvm_occupancy}")
    text = render(infos, clang_version(clang))
    stale = False
    if args.check:
        stale = not args.doc.exists() or args.doc.read_text() != text
        if stale and not failures:
            print(f"FAIL {args.doc.relative_to(ROOT) if args.doc.is_relative_to(ROOT) else args.doc} is stale: "
                  f"run python3 tools/amd_resources.py")
    elif not failures:
        args.doc.write_text(text)
    n_mod = len(compile_variants()) * len(ARCHS)
    print(f"{'FAIL' if failures or offenders or stale else 'ok  '} clang-19 {' '.join(a.name for a in ARCHS)}: "
          f"{n_mod} modules, {len(infos)} kernels, {len(failures)} compile failures, {len(offenders)} offenders")
    return 1 if failures or offenders or stale else 0


if __name__ == "__main__":
    sys.exit(main())
