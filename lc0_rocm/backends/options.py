"""lc0-style backend options: the one parser of the string ("policy_head=optimistic,gpus=0,1") and of
each value (booleans, integers, choices: values.py's rules, as every option of the engine), shared by
the backend factory and the GPU backend.

Every error is a one-line `BackendError` naming the option, what was given and what is accepted.
"""

from __future__ import annotations

from ..errors import BackendError
from ..values import BadValue, parse_bool, parse_choice, parse_int


def parse_backend_options(options: str) -> dict[str, str]:
    """Parse "key=value,key2=value2" (spaces around items ignored; empty string → {}).

    An item without "=" after a key=value item continues that value as a list, so that
    "gpus=0,1,policy_head=vanilla" gives {"gpus": "0,1", "policy_head": "vanilla"}.
    """
    result: dict[str, str] = {}
    last_key = None
    for item in (options or "").split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep and last_key is not None:
            result[last_key] += "," + item
            continue
        if not sep or not key:
            raise BackendError(f"bad backend option {item!r}: expected key=value")
        result[key] = value
        last_key = key
    return result


def bool_option(opts: dict[str, str], key: str, default: bool) -> bool:
    """opts[key] as true/false (also 1/0, yes/no, on/off), or `default` when absent."""
    if key not in opts:
        return default
    try:
        return parse_bool(opts[key])
    except BadValue:
        raise BackendError(f"backend option {key}={opts[key]!r}: expected true or false") from None


def int_option(opts: dict[str, str], key: str, default, minimum: int = 1):
    """opts[key] as an integer >= minimum, or `default` when absent."""
    if key not in opts:
        return default
    try:
        return parse_int(opts[key], minimum)
    except BadValue:
        what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise BackendError(f"backend option {key}={opts[key]!r}: expected {what}") from None


def choice_option(opts: dict[str, str], key: str, choices: tuple[str, ...], default: str) -> str:
    """opts[key] (lower-cased) if it is one of `choices`, or `default` when absent."""
    if key not in opts:
        return default
    try:
        return parse_choice(opts[key], choices)
    except BadValue:
        raise BackendError(f"backend option {key}={opts[key]!r}: expected one of {', '.join(choices)}") from None


def gpu_list(opts: dict[str, str]) -> list[int]:
    """The devices of `gpu` (one index, default 0) or `gpus` (lc0's demux list, "0,1" or "0:1"; a device
    may repeat: one runner per entry)."""
    if "gpus" not in opts:
        return [int_option(opts, "gpu", 0, minimum=0)]
    items = [x.strip() for x in opts["gpus"].replace(":", ",").split(",") if x.strip()]
    try:
        gpus = [int(x) for x in items]
    except ValueError:
        gpus = []
    if not gpus or min(gpus) < 0:
        raise BackendError(f"backend option gpus={opts['gpus']!r}: expected device indices like 0,1")
    return gpus
