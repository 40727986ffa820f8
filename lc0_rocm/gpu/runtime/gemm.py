"""The one hipBLASLt entry point: row-major y[m,n] = x[m,k] · w[n,k]ᵀ (+ bias[n]) (relu|gelu), fp32 accumulate.

In hipBLASLt's column-major terms this is D(n×m) = op(A)·B with A = w seen as k×n (transposed), B = x as
k×m, D = y as n×m; the bias runs along D's rows, i.e. one value per output feature. fp16 storage uses
compute type 32F (fp32 accumulation); fp32 storage uses 32F too, which is true fp32 (never TF32).

Per (m, n, k, dtype, epilogue) a `_Plan` builds its descriptors once and picks an algorithm: the heuristic
is asked for many candidates (split-K variants included) with a 32 MiB workspace; for m >= TUNE_MIN_M each
is timed once on the caller's buffers and the fastest is kept, smaller GEMMs take the heuristic's first. The winner's rank in the heuristic's list is cached on disk per
device (cache_root()/gemm/*.json); later processes ask the heuristic again and take that rank without timing.
`batch` > 1 makes it strided-batched: `batch` independent products, operand i at x + i*m*k, w + i*n*k,
y + i*m*n elements (the Winograd convolution's 36 products in one call).
Every matmul is reported to the observers of `observe` (profilers) when there are any.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import threading

import numpy as np

from . import observe
from .compiler import _hip_python_version, cache_root
from .dtypes import STORAGE_TYPES
from .hiperr import GemmError, GpuError, GpuOutOfMemoryError, hip_enum, lt_call
from .memory import DeviceBuffer

WORKSPACE_BYTES = 32 << 20  # split-K and stream-K kernels need scratch; 32 MiB covers them on both vendors
REQUESTED_ALGOS = 64
# Below this many rows the weights dominate and stream from memory in a real forward pass, while the
# tuning loop re-reads them from L2: timing there picks worse algorithms than the heuristic (measured
# on H100 at batches 1 and 16), so small GEMMs take the heuristic's first choice.
TUNE_MIN_M = 4096
# Strided-batched GEMMs (Winograd's 36 products of [4n, K] x [K, N]) are tuned from 16 positions (m = 64)
# up: their filters are small and L2-resident in a forward pass too.
TUNE_MIN_M_BATCHED = 64
ALIGN = 16  # bytes; every operand pointer must be aligned to this
EPILOGUES = {  # (act, has_bias) -> hipblasLtEpilogue_t member
    ("none", False): "HIPBLASLT_EPILOGUE_DEFAULT",
    ("none", True): "HIPBLASLT_EPILOGUE_BIAS",
    ("relu", False): "HIPBLASLT_EPILOGUE_RELU",
    ("relu", True): "HIPBLASLT_EPILOGUE_RELU_BIAS",
    ("gelu", False): "HIPBLASLT_EPILOGUE_GELU",
    ("gelu", True): "HIPBLASLT_EPILOGUE_GELU_BIAS",
}
# hipBLASLt heuristic result: algo (16 bytes + size_t) | workspaceSize | state | wavesCount | reserved[4]
_RESULT = np.dtype([("algo", "V24"), ("workspace", "<u8"), ("state", "<i4"), ("waves", "<f4"), ("reserved", "V16")])


def _i32(v) -> np.ndarray:
    return np.array([int(getattr(v, "value", v))], dtype=np.int32)


class _Plan:
    """Descriptors for one GEMM shape and the chosen algorithm (24 bytes kept alive in `algo`)."""

    def __init__(self, gemm: "Gemm", m: int, n: int, k: int, dtype: str, act: str, has_bias: bool, batch: int = 1):
        self.gemm, self.m, self.n, self.k, self.dtype, self.act, self.has_bias = gemm, m, n, k, dtype, act, has_bias
        self.batch = batch
        self.desc = self.a = self.b = self.d = None
        self.algo: np.ndarray | None = None
        self.algo_ms: float | None = None
        self.candidates = 0
        data_type = hip_enum("hip", "hipDataType", STORAGE_TYPES[dtype].hip)
        # operation and compute type enums are hipBLAS's (shared with hipBLASLt)
        self.desc = lt_call("hipblasLtMatmulDescCreate", hip_enum("hipblas", "hipblasComputeType_t", "HIPBLAS_COMPUTE_32F"),
                            hip_enum("hip", "hipDataType", "HIP_R_32F"))
        attr = lambda name: hip_enum("hipblaslt", "hipblasLtMatmulDescAttributes_t", f"HIPBLASLT_MATMUL_DESC_{name}")
        self._set(attr("TRANSA"), _i32(hip_enum("hipblas", "hipblasOperation_t", "HIPBLAS_OP_T")))
        self._set(attr("TRANSB"), _i32(hip_enum("hipblas", "hipblasOperation_t", "HIPBLAS_OP_N")))
        self._set(attr("EPILOGUE"), _i32(hip_enum("hipblaslt", "hipblasLtEpilogue_t", EPILOGUES[(act, has_bias)])))
        self._bias_attr = attr("BIAS_POINTER")
        self.a = lt_call("hipblasLtMatrixLayoutCreate", data_type, k, n, k)  # w: k×n col-major, ld k
        self.b = lt_call("hipblasLtMatrixLayoutCreate", data_type, k, m, k)  # x: k×m col-major, ld k
        self.d = lt_call("hipblasLtMatrixLayoutCreate", data_type, n, m, n)  # y: n×m col-major, ld n
        if batch > 1:
            lay = lambda name: hip_enum("hipblaslt", "hipblasLtMatrixLayoutAttribute_t", f"HIPBLASLT_MATRIX_LAYOUT_{name}")
            for layout, stride in ((self.a, n * k), (self.b, m * k), (self.d, m * n)):
                for name, value in (("BATCH_COUNT", _i32(batch)), ("STRIDED_BATCH_OFFSET", np.array([stride], np.int64))):
                    lt_call("hipblasLtMatrixLayoutSetAttribute", layout, lay(name), value, value.nbytes)

    def _set(self, attr, value: np.ndarray) -> None:
        lt_call("hipblasLtMatmulDescSetAttribute", self.desc, attr, value, value.nbytes)

    def set_bias(self, bias: DeviceBuffer | None) -> None:
        if self.has_bias:
            self._set(self._bias_attr, np.array([bias.ptr], dtype=np.uint64))

    def heuristic(self) -> np.ndarray:
        """The heuristic's usable candidates, best-estimated first."""
        pref = lt_call("hipblasLtMatmulPreferenceCreate")
        try:
            ws = np.array([self.gemm.workspace.nbytes], dtype=np.uint64)
            lt_call("hipblasLtMatmulPreferenceSetAttribute", pref,
                    hip_enum("hipblaslt", "hipblasLtMatmulPreferenceAttributes_t",
                          "HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES"), ws, ws.nbytes)
            results = np.zeros(REQUESTED_ALGOS, dtype=_RESULT)
            count = lt_call("hipblasLtMatmulAlgoGetHeuristic", self.gemm.handle, self.desc, self.a, self.b,
                            self.d, self.d, pref, REQUESTED_ALGOS, results)
        finally:
            lt_call("hipblasLtMatmulPreferenceDestroy", pref)
        results = results[: int(count)]
        return results[(results["state"] == 0) & (results["workspace"] <= self.gemm.workspace.nbytes)]

    def run(self, x, w, y, algo: np.ndarray, stream, workspace=None) -> None:
        alpha, beta = self.gemm.alpha, self.gemm.beta
        ws = workspace if workspace is not None else self.gemm.workspace
        lt_call("hipblasLtMatmul", self.gemm.handle, self.desc, alpha, w.ptr, self.a, x.ptr, self.b, beta,
                y.ptr, self.d, y.ptr, self.d, algo.ctypes.data, ws.ptr, min(ws.nbytes, self.gemm.workspace.nbytes),
                stream.handle)

    def destroy(self) -> None:
        for fn, h in (("hipblasLtMatrixLayoutDestroy", self.a), ("hipblasLtMatrixLayoutDestroy", self.b),
                      ("hipblasLtMatrixLayoutDestroy", self.d), ("hipblasLtMatmulDescDestroy", self.desc)):
            if h is not None:
                lt_call(fn, h)
        self.a = self.b = self.d = self.desc = None


class Gemm:
    """A hipBLASLt handle, its workspace and the plans made so far (one per shape/dtype/epilogue)."""

    def __init__(self, device, workspace_bytes: int = WORKSPACE_BYTES, tune: bool = True):
        self.device = device
        device.make_current()
        self.handle = lt_call("hipblasLtCreate")
        self.workspace = DeviceBuffer.allocate(device, workspace_bytes)
        self.alpha = np.ones(1, dtype=np.float32)
        self.beta = np.zeros(1, dtype=np.float32)
        self.tune = tune and os.environ.get("LC0_ROCM_GEMM_TUNE", "1") != "0"
        self.plans: dict[tuple, _Plan] = {}
        self._lock = threading.Lock()
        self._cache_path = cache_root() / "gemm" / (
            re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{device.name}-{device.arch}-hip-python-{_hip_python_version()}") + ".json")

    # ------------------------------------------------------------------ public entry point

    def linear(self, x: DeviceBuffer, w: DeviceBuffer, y: DeviceBuffer, m: int, n: int, k: int,
               bias: DeviceBuffer | None = None, act: str = "none", dtype: str = "f16", stream=None,
               workspace: DeviceBuffer | None = None, batch: int = 1) -> None:
        """y[m,n] = act(x[m,k] @ w[n,k].T + bias[n]), all row-major, dtype 'f16' or 'f32'; with `batch` > 1,
        that many such products back to back in x, w and y (no bias or activation then).

        `workspace` (at least this handle's workspace size) replaces the handle's own, so GEMMs can
        run concurrently on two streams.
        """
        if dtype not in STORAGE_TYPES:
            raise GemmError(f"unsupported dtype {dtype!r} (f16, f32)", m, n, k, dtype)
        if (act, bias is not None) not in EPILOGUES:
            raise GemmError(f"unsupported epilogue activation {act!r} (none, relu, gelu)", m, n, k, dtype)
        if min(m, n, k, batch) < 1:
            raise GemmError("every dimension must be positive", m, n, k, dtype)
        if batch > 1 and (bias is not None or act != "none"):
            raise GemmError("a batched GEMM takes no bias or activation", m, n, k, dtype)
        size = STORAGE_TYPES[dtype].itemsize
        for name, buf, count in (("x", x, batch * m * k), ("w", w, batch * n * k), ("y", y, batch * m * n),
                                 ("bias", bias, n)):
            if buf is None:
                continue
            if buf.nbytes < count * size:
                raise GemmError(f"{name} holds {buf.nbytes} bytes, needs {count * size}", m, n, k, dtype)
            if buf.ptr % ALIGN:
                raise GemmError(f"{name} at 0x{buf.ptr:x} is not {ALIGN}-byte aligned", m, n, k, dtype)
        s = stream or self.device.stream
        plan = self._plan(m, n, k, dtype, act, bias is not None, x, w, y, bias, s, workspace, batch)
        plan.set_bias(bias)
        if workspace is not None and workspace.nbytes < self.workspace.nbytes:
            raise GemmError(f"workspace of {workspace.nbytes} bytes, needs {self.workspace.nbytes}", m, n, k, dtype)
        try:
            plan.run(x, w, y, plan.algo, s, workspace)
        except GpuOutOfMemoryError:
            raise  # its own type: a smaller batch may fit
        except GpuError as e:
            raise GemmError(f"hipblasLtMatmul failed: {e}", m, n, k, dtype) from None
        if observe.OBSERVERS:
            def replay(st):
                plan.set_bias(bias)
                plan.run(x, w, y, plan.algo, st, workspace)

            label = f"gemm {m}x{n}x{k} {dtype} {act}" + (f" x{batch}" if batch > 1 else "")
            observe.notify(observe.Launch("gemm", label, plan, (x, w, y, bias),
                                          replay=replay))
        if stream is None:
            s.synchronize()

    def plan_info(self, m: int, n: int, k: int, dtype: str = "f16", act: str = "none", has_bias: bool = False,
                  batch: int = 1):
        """(candidates timed or 0 if from cache, chosen algo's tuned ms or None) of a made plan."""
        p = self.plans[(m, n, k, dtype, act, has_bias) + ((batch,) if batch > 1 else ())]
        return p.candidates, p.algo_ms

    # ------------------------------------------------------------------ plans and tuning

    def _plan(self, m, n, k, dtype, act, has_bias, x, w, y, bias, stream, workspace=None, batch=1) -> _Plan:
        key = (m, n, k, dtype, act, has_bias) + ((batch,) if batch > 1 else ())
        plan = self.plans.get(key)
        if plan is not None:
            return plan
        with self._lock:
            plan = _Plan(self, m, n, k, dtype, act, has_bias, batch)
            cands = plan.heuristic()
            if len(cands) == 0:
                plan.destroy()
                raise GemmError("hipBLASLt found no algorithm", m, n, k, dtype)
            tag = f"{m},{n},{k},{dtype},{act},{int(has_bias)}" + (f",x{batch}" if batch > 1 else "")
            tuned = self.tune and m >= (TUNE_MIN_M if batch == 1 else TUNE_MIN_M_BATCHED)
            cached = self._load_cache().get(tag) if tuned else None  # not tuned: the heuristic's pick
            if cached and cached.get("count") == len(cands) and 0 <= cached.get("rank", -1) < len(cands):
                rank = int(cached["rank"])
                plan.algo_ms = cached.get("ms")
            elif tuned and len(cands) > 1:
                plan.set_bias(bias)
                rank, plan.algo_ms = self._tune(plan, cands, x, w, y, stream, workspace)
                plan.candidates = len(cands)
                self._store_cache(tag, {"rank": rank, "count": len(cands), "ms": plan.algo_ms})
            else:
                rank = 0
            plan.algo = np.frombuffer(bytearray(cands[rank]["algo"].tobytes()), dtype=np.uint8)
            self.plans[key] = plan
            return plan

    def _tune(self, plan: _Plan, cands: np.ndarray, x, w, y, stream, workspace=None) -> tuple[int, float]:
        from .stream import Event

        best, best_ms = 0, float("inf")
        out_of_memory = None
        flops = 2.0 * plan.m * plan.n * plan.k * plan.batch
        reps = max(2, min(20, int(2e10 / flops)))  # about 20 GFLOP of work per candidate, 2 to 20 runs
        for i, cand in enumerate(cands):
            algo = np.frombuffer(bytearray(cand["algo"].tobytes()), dtype=np.uint8)
            try:
                plan.run(x, w, y, algo, stream, workspace)  # warm-up, and a candidate that fails is skipped
                start, end = Event(), Event()
                start.record(stream)
                for _ in range(reps):
                    plan.run(x, w, y, algo, stream, workspace)
                end.record(stream)
                end.synchronize()
            except GpuError as e:
                if isinstance(e, GpuOutOfMemoryError):
                    out_of_memory = e
                stream.synchronize()
                continue
            ms = start.elapsed_ms(end) / reps
            if ms < best_ms:
                best, best_ms = i, ms
        if best_ms == float("inf"):
            if out_of_memory is not None:
                raise out_of_memory
            raise GemmError("every hipBLASLt candidate failed to run", plan.m, plan.n, plan.k, plan.dtype)
        return best, best_ms

    def _load_cache(self) -> dict:
        try:
            return json.loads(self._cache_path.read_text())
        except (OSError, ValueError):
            return {}

    def _store_cache(self, tag: str, entry: dict) -> None:
        try:
            data = self._load_cache()
            data[tag] = entry
            self._cache_path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self._cache_path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=0, sort_keys=True)
            os.replace(tmp, self._cache_path)
        except OSError:
            pass  # a read-only cache only costs re-tuning next time

    def close(self) -> None:
        for plan in self.plans.values():
            plan.destroy()
        self.plans.clear()
        if self.handle is not None:
            lt_call("hipblasLtDestroy", self.handle)
            self.handle = None
        self.workspace.free()
