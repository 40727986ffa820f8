"""hipRTC compile of lc0_rocm/kernels/*.hip for the device arch, with an on-disk code-object cache.

Source in, bytes out. The cache key hashes the source, every header of the kernels folder, the arch, the
options, hip-python's version and the hipRTC version; entries live under ~/.cache/lc0-rocm/kernels
($LC0_ROCM_CACHE overrides the root). A second process start compiles nothing. Compile failures raise
`CompileError` with the hipRTC log and the file name.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .hiperr import CompileError, rtc_call, rtc_status

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernels"  # lc0_rocm/kernels


def cache_root() -> Path:
    root = os.environ.get("LC0_ROCM_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "lc0-rocm"


def _hip_python_version() -> str:
    try:
        from importlib.metadata import version

        return version("hip-python")
    except Exception:
        return "unknown"


def kernel_headers() -> dict[str, str]:
    """Every .h of the kernels folder, by the name kernels include it as."""
    return {p.name: p.read_text() for p in sorted(KERNEL_DIR.glob("*.h"))}


class Compiler:
    """Compiles for one arch; counts cache hits and misses (tests read them)."""

    def __init__(self, arch: str):
        self.arch = arch
        self.hits = 0
        self.misses = 0
        self._rtc_version: str | None = None

    def _version(self) -> str:
        if self._rtc_version is None:
            major, minor = rtc_call("hiprtcVersion")
            self._rtc_version = f"{major}.{minor}"
        return self._rtc_version

    def key(self, source: str, name: str, options: tuple[str, ...], headers: dict[str, str]) -> str:
        blob = json.dumps({"source": source, "name": name, "headers": headers, "arch": self.arch,
                           "options": list(options), "hip-python": _hip_python_version(),
                           "hiprtc": self._version()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def compile_source(self, source: str, name: str, options=(), headers: dict[str, str] | None = None) -> bytes:
        options = tuple(options)
        headers = kernel_headers() if headers is None else headers
        key = self.key(source, name, options, headers)
        path = cache_root() / "kernels" / f"{Path(name).stem}-{self.arch}-{key[:32]}.co"
        if path.exists():
            self.hits += 1
            return path.read_bytes()
        code = self._compile(source, name, options, headers)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(code)
        os.replace(tmp, path)  # atomic: a concurrent reader sees all or nothing
        self.misses += 1
        return code

    def compile_file(self, filename: str, options=()) -> bytes:
        path = KERNEL_DIR / filename
        return self.compile_source(path.read_text(), path.name, options)

    def _compile(self, source: str, name: str, options: tuple[str, ...], headers: dict[str, str]) -> bytes:
        names = list(headers)
        prog = rtc_call("hiprtcCreateProgram", source.encode(), name.encode(), len(names),
                        [headers[n].encode() for n in names], [n.encode() for n in names])
        try:
            opts = [f"--offload-arch={self.arch}".encode()] + [o.encode() for o in options]
            code, status, _ = rtc_status("hiprtcCompileProgram", prog, len(opts), opts)
            if code != 0:
                raise CompileError(f"hipRTC failed to compile {name} for {self.arch}: {status}", self._log(prog))
            size = int(rtc_call("hiprtcGetCodeSize", prog))
            buf = bytearray(size)
            rtc_call("hiprtcGetCode", prog, buf)
            return bytes(buf)
        finally:
            rtc_status("hiprtcDestroyProgram", prog.createRef())  # takes hiprtcProgram*

    @staticmethod
    def _log(prog) -> str:
        try:
            size = int(rtc_call("hiprtcGetProgramLogSize", prog))
            buf = bytearray(max(size, 1))
            rtc_call("hiprtcGetProgramLog", prog, buf)
            return buf.rstrip(b"\x00").decode(errors="replace")
        except CompileError as e:
            return f"(no log: {e})"


_COMPILERS: dict[str, Compiler] = {}


def compiler_for(device) -> Compiler:
    c = _COMPILERS.get(device.arch)
    if c is None:
        c = _COMPILERS[device.arch] = Compiler(device.arch)
    return c


def compile_file(device, filename: str, options=()) -> bytes:
    """Code object for lc0_rocm/kernels/<filename> on `device` (cached on disk)."""
    return compiler_for(device).compile_file(filename, options)
