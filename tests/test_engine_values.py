"""One value parser (lc0_rocm/values.py) behind every option: UCI options and flags, backend options,
backendbench's flags and analyse's selection read true/false/on/1, numbers and choices the same way."""

from __future__ import annotations

import argparse

import pytest

from lc0_rocm import engine_options as eo
from lc0_rocm.analyse.reader import InputError, Selection
from lc0_rocm.backends.factory import BACKEND_NAMES, DEFAULT_BACKEND
from lc0_rocm.backends.options import bool_option, choice_option, int_option
from lc0_rocm.commands.backendbench import _bool
from lc0_rocm.errors import BackendError
from lc0_rocm.search.params import SearchParams


@pytest.mark.parametrize("text,value", [("true", True), ("On", True), ("1", True), ("yes", True),
                                        ("false", False), ("OFF", False), ("0", False), ("no", False)])
def test_every_boolean_reads_the_same(text, value):
    assert eo.spec("UCI_ShowWDL").parse(text) is value
    assert bool_option({"mlh": text}, "mlh", not value) is value
    assert _bool(text) is value
    assert eo.parse_flags([f"--show-wdl={text}"])[0] == [("UCI_ShowWDL", value)]


def test_every_bad_boolean_is_refused_the_same():
    with pytest.raises(eo.OptionError, match="^option UCI_ShowWDL: expected true or false, got 'maybe'$"):
        eo.spec("UCI_ShowWDL").parse("maybe")
    with pytest.raises(BackendError, match="expected true or false"):
        bool_option({"mlh": "maybe"}, "mlh", True)
    with pytest.raises(argparse.ArgumentTypeError, match="^expected true or false, got 'maybe'$"):
        _bool("maybe")


def test_numbers_and_choices():
    assert eo.spec("Threads").parse(" 3 ") == 3 and int_option({"max_batch": "64"}, "max_batch", 1) == 64
    with pytest.raises(eo.OptionError, match=r"^option Threads: 999 is out of range \[0, 128\]$"):
        eo.spec("Threads").parse("999")
    with pytest.raises(BackendError, match="expected a positive integer"):
        int_option({"max_batch": "0"}, "max_batch", 1)
    assert eo.spec("Backend").parse("CPU") == "cpu" and choice_option({"a": "Auto"}, "a", ("auto", "x"), "x") == "auto"
    assert Selection.parse(side="White", every=2) == Selection(1, None, "white", 2)
    with pytest.raises(InputError, match="--side 'grey'"):
        Selection.parse(side="grey")
    with pytest.raises(InputError, match="--every 0"):
        Selection.parse(every=0)


def test_one_table_of_defaults_and_one_list_of_backends():
    """SearchParams' defaults are the option table's (lc0's); the factory's names are the UCI combo's."""
    p = SearchParams()
    assert (p.cpuct, p.fpu_value, p.policy_temperature, p.smart_pruning_factor, p.max_out_of_order_factor) == \
        tuple(eo.default(n) for n in ("CPuct", "FpuValue", "PolicyTemperature", "SmartPruningFactor",
                                      "MaxOutOfOrderEvalsFactor"))
    assert BACKEND_NAMES == eo.spec("Backend").choices and DEFAULT_BACKEND == eo.default("Backend")
