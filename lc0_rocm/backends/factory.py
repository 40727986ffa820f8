"""Backend creation by name — the one backend policy of every entry point — and lc0-style backend
options ("policy_head=optimistic,value_head=q").

Names (`BACKEND_NAMES`: engine_options.BACKENDS, the one list, in the order of the UCI combo, of
`--help` and of the commands' help; `DEFAULT_BACKEND` = "auto" everywhere):
  auto       the GPU (as rocm-auto) when one is usable, otherwise the cpu backend with ONE notice
             "<why>; using the cpu backend" (on stderr as "lc0-rocm: ...", or to the caller's `notify`)
  cpu        the numpy reference
  rocm       GPU, fp32
  rocm-fp16  GPU, fp16
  rocm-auto  GPU, the GPU module picks the precision
  random     lc0's `random`: outputs hashed from the inputs, no network work (`randomnet`)
  trivial    lc0's `trivial`: fixed policy, Q from piece-square tables (`trivial`)
random and trivial measure the search alone (beside `lc0 --backend=random`); like lc0's they ignore
the weights (the net only names the engine's settings) and present lc0's network capabilities:
input format `input_mode` (default 1, classical), WDL (random) or a plain value (trivial), no
moves-left; the backend's `net` says so, and callers take the formats from it.
The three rocm names need a GPU: without one they fail with one line (BackendError "no GPU: ...").
Entry points (commands, tools, the engine) build backends through `lc0_rocm.api.open_backend`, which
adds the weights file and the head options to this. The GPU module `lc0_rocm.backends.rocm` is imported only
when asked for; its contract:

    gpu_available() -> bool            # a HIP device is present and usable
    RocmBackend(net, precision, options, max_batch)  # precision "fp32" | "fp16" | "auto"; options:
                                                     # dict[str, str]; max_batch: None or the device batch

Options understood here: `policy_head` / `value_head` (heads are chosen when the net is loaded:
pass `head_options(opts)` to `load_net`; create_backend only checks the net matches), `mlh`
(true/false: false drops the moves-left output), `batch_size` (cpu: positions per numpy chunk),
`threads` (cpu: BLAS threads, default 1).
Other keys are passed to the GPU backend untouched and ignored by the cpu backend, as lc0 does.
Options and their values are parsed by `options` (one parser for every backend).
"""

from __future__ import annotations

import importlib
import sys
import threading
from typing import TYPE_CHECKING, Callable, Optional

from ..engine_options import BACKENDS, default
from ..errors import BackendError
from .options import bool_option, int_option, parse_backend_options

__all__ = ["BACKEND_NAMES", "DEFAULT_BACKEND", "check_backend_name", "create_backend", "gpu_usable", "head_options",
           "open_devices_early", "parse_backend_options"]

if TYPE_CHECKING:  # kept light: the command line imports the names without numpy
    from ..net.description import NetDescription
    from .base import Backend

BACKEND_NAMES = BACKENDS
DEFAULT_BACKEND = default("Backend")
_ROCM_PRECISION = {"rocm": "fp32", "rocm-fp16": "fp16", "rocm-auto": "auto"}


def head_options(options: str | dict) -> dict[str, str]:
    """The `policy_head` / `value_head` keyword arguments for `load_net` found in the options."""
    opts = parse_backend_options(options) if isinstance(options, str) else options
    return {k: opts[k] for k in ("policy_head", "value_head") if k in opts}


def _check_heads(net: NetDescription, opts: dict[str, str]) -> None:
    for key, chosen in (("policy_head", net.policy_head_name), ("value_head", net.value_head_name)):
        want = opts.get(key)
        if want is not None and want != chosen:
            raise BackendError(f"backend option {key}={want} but the net was loaded with {key} {chosen!r}")


def _import_rocm():
    """The GPU backend module, or a BackendError saying why there is none."""
    try:
        return importlib.import_module("lc0_rocm.backends.rocm")
    except ModuleNotFoundError as e:
        if e.name == "lc0_rocm.backends.rocm":
            raise BackendError("no GPU backend: lc0_rocm.backends.rocm is not part of this installation") from None
        raise BackendError(f"no GPU backend: {e}") from None
    except ImportError as e:
        raise BackendError(f"no GPU backend: {e}") from None


def gpu_usable() -> tuple[bool, str]:
    """(True, "") when the GPU backend imports and sees a device, else (False, reason)."""
    try:
        rocm = _import_rocm()
        if rocm.gpu_available():
            return True, ""
        return False, "no GPU device found"
    except BackendError as e:
        return False, str(e)
    except Exception as e:  # a broken HIP runtime must not stop the CPU fallback
        return False, f"GPU check failed: {type(e).__name__}: {e}"


def open_devices_early(name: str, options: str) -> Optional[threading.Thread]:
    """For a backend that will run on the GPU (the rocm names, and auto): a started daemon thread that
    does the GPU's first steps (hip-python imported, each device of the options' `gpu`/`gpus` opened:
    context and properties) while the caller loads the net; the backend's own start then finds them
    done. hip-python leaves the GIL in those calls, so they hide under the net's inflate (measured on
    2 x H200: net load 1.94 s, the open 0.81 s, both on two threads 2.18 s; docs/perf.md). Join it
    before creating the backend (`get_device` is not made for two threads opening one device). Never
    raises: what fails here fails again, with its one line, where the backend is created. None for
    the other backends."""
    if name not in _ROCM_PRECISION and name != "auto":
        return None
    try:
        from .options import gpu_list

        indices = gpu_list(parse_backend_options(options))
    except BackendError:
        return None

    def open_all() -> None:
        try:
            rocm = _import_rocm()
            for i in dict.fromkeys(indices):
                if not rocm.device_usable(i):
                    return
        except Exception:  # noqa: BLE001 - reported by the backend's own start
            return

    thread = threading.Thread(target=open_all, name="gpu-open", daemon=True)
    thread.start()
    return thread


def _create_rocm(name: str, net: NetDescription, opts: dict[str, str], max_batch: Optional[int]) -> Backend:
    rocm = _import_rocm()
    try:
        available = rocm.gpu_available()
    except Exception as e:
        raise BackendError(f"no GPU: device check failed ({type(e).__name__}: {e})") from None
    if not available:
        raise BackendError(f"no GPU: backend {name!r} needs a HIP device and none is usable")
    return rocm.RocmBackend(net, _ROCM_PRECISION[name], opts, max_batch)


def _create_cpu(net: NetDescription, opts: dict[str, str]) -> Backend:
    from .cpu import DEFAULT_CHUNK, CpuBackend

    chunk = int_option(opts, "batch_size", DEFAULT_CHUNK)
    threads = int_option(opts, "threads", None)
    mlh = bool_option(opts, "mlh", True)
    return CpuBackend(net, chunk=chunk, mlh=mlh, threads=threads)


def check_backend_name(name: str) -> None:
    """BackendError (one line) unless `name` is one of BACKEND_NAMES."""
    if name not in BACKEND_NAMES:
        raise BackendError(f"unknown backend {name!r} (choose from {', '.join(BACKEND_NAMES)})")


def _notify_stderr(message: str) -> None:
    print(f"lc0-rocm: {message}", file=sys.stderr)


def create_backend(name: str, net: NetDescription, options: str = "",
                   notify: Optional[Callable[[str], None]] = None, max_batch: Optional[int] = None) -> Backend:
    """Create the named backend for `net`; BackendError for an unknown name or a missing GPU.

    `notify(message)` receives auto's one fallback notice (default: one "lc0-rocm: ..." line on stderr;
    the UCI engine passes its `info string` writer). `max_batch` overrides a GPU backend's device batch
    (the options' `max_batch`; the engine passes a smaller one after the GPU ran out of memory); the
    other backends have no device batch and ignore it."""
    check_backend_name(name)
    opts = parse_backend_options(options)
    _check_heads(net, opts)
    bool_option(opts, "mlh", True)  # checked here for every backend
    if name == "cpu":
        return _create_cpu(net, opts)
    if name == "random":
        from .randomnet import RandomBackend

        return RandomBackend(net, opts)
    if name == "trivial":
        from .trivial import TrivialBackend

        return TrivialBackend(net, opts)
    if name == "auto":
        ok, why = gpu_usable()
        if not ok:
            (notify or _notify_stderr)(f"{why}; using the cpu backend")
            return _create_cpu(net, opts)
        name = "rocm-auto"
    return _create_rocm(name, net, opts, max_batch)
