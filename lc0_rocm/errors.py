"""The package's exception hierarchy: every failure a user can cause or meet is one of these.

The CLI turns any `Lc0RocmError` into a one-line message on stderr and a non-zero exit.
"""


class Lc0RocmError(Exception):
    """Base class of every error this package raises on purpose."""


class NetFormatError(Lc0RocmError):
    """The weights file is unreadable, truncated, not an Lc0 net, or uses an unsupported format."""


class PositionError(Lc0RocmError, ValueError):
    """A FEN or a move (sequence) is invalid or illegal."""


class BackendError(Lc0RocmError):
    """A backend cannot be created or failed while evaluating (no GPU, out of memory, ...)."""


class GpuError(BackendError):
    """A HIP, hipRTC or hipBLASLt call failed; the message names the call and the error."""


class GpuOutOfMemoryError(GpuError):
    """The GPU ran out of memory: a HIP call's hipErrorOutOfMemory, hipBLASLt's HIPBLAS_STATUS_ALLOC_FAILED
    (the runtime's status checker raises it), or host memory running out inside the GPU backend. A
    smaller device batch (the backend's `max_batch`) may fit: the engine retries with one."""


class CompileError(GpuError):
    """A kernel failed to compile with hipRTC; carries the compiler log."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message if not log else f"{message}\n{log}")
        self.log = log


class ArgumentError(Lc0RocmError, TypeError):
    """A function of the public API got an argument of a type it does not take (e.g. a number for a
    weights path)."""


class TablebaseError(Lc0RocmError):
    """A SyzygyPath entry is not a directory, holds no Syzygy tables, or holds a damaged table file."""


def one_line(what: object) -> str:
    """An error (or any text) as one line for a message: its words, whitespace and newlines collapsed;
    an exception with no text gives its type's name."""
    text = " ".join(str(what).split())
    if not text and isinstance(what, BaseException):
        return type(what).__name__
    return text

