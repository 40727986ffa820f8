"""The one parser of option values: booleans, integers, numbers and choices, from text (UCI
`setoption`, lc0-style flags and config files, backend options, a command's arguments).

One set of rules: a boolean is true/1/yes/on or false/0/no/off (any case); an integer or a number
may have a range; a choice matches case-insensitively and gives the spelling of the list. A bad value
raises `BadValue` (a ValueError) whose text says what is expected; each caller puts its own name in
front (`option Threads: ...`, `backend option mlh=...: ...`, `--side ...: ...`).
"""

from __future__ import annotations

from typing import Optional

TRUE = ("true", "1", "yes", "on")
FALSE = ("false", "0", "no", "off")


class BadValue(ValueError):
    """A value that does not parse: the text says what was expected (no name in front)."""


def parse_bool(raw) -> bool:
    if isinstance(raw, bool):
        return raw
    low = str(raw).strip().lower()
    if low in TRUE:
        return True
    if low in FALSE:
        return False
    raise BadValue(f"expected true or false, got {str(raw).strip()!r}")


def parse_int(raw, lo: Optional[float] = None, hi: Optional[float] = None) -> int:
    return _parse_number(raw, int, "an integer", lo, hi)


def parse_float(raw, lo: Optional[float] = None, hi: Optional[float] = None) -> float:
    return _parse_number(raw, float, "a number", lo, hi)


def _parse_number(raw, cast, what: str, lo, hi):
    """`cast` of the text (NaN refused), within [lo, hi] where given."""
    text = str(raw).strip()
    try:
        value = cast(text)
    except ValueError:
        raise BadValue(f"expected {what}, got {text!r}") from None
    if value != value:
        raise BadValue(f"expected {what}, got {text!r}")
    _check_range(value, text, lo, hi)
    return value


def parse_choice(raw, choices: tuple) -> str:
    text = str(raw).strip()
    for c in choices:
        if c.lower() == text.lower():
            return c
    raise BadValue(f"{text!r} is not one of {', '.join(choices)}")


def _check_range(value, text: str, lo, hi) -> None:
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise BadValue(f"{text} is out of range [{_num(lo)}, {_num(hi)}]")


def _num(x) -> str:
    if x is None:
        return ""
    return str(int(x)) if float(x).is_integer() else str(x)
