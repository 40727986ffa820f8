"""The engine's options: one table of lc0's UCI options with their command-line flags, and the one
parser of their values (from `setoption`, from flags, from a config file).

Names, types, ranges and defaults are lc0 v0.32.1's (`lc0 --help --show-hidden`; the search ones in
`src/search/classic/params.cc: BaseSearchParams::Populate`). Each option is also a flag in lc0's
spelling: `--threads=2`, `--threads 2`, `-t 2`, `--syzygy-paths=DIR`, booleans as `--show-wdl` /
`--no-show-wdl` (or `=true`/`=false`). A config file holds one flag per line (`#` starts a comment).

Three kinds of entries:
- declared options, listed by `uci` (and by `--help`, hidden ones with `--show-hidden`);
- hidden options (lc0 hides them too): accepted, not listed by `uci`;
- `COMPATIBLE_ONLY`: lc0 options about its C++ worker threads, prefetching and spin locks, which
  have no counterpart in this engine's single compiled worker; they are accepted (so a GUI's saved
  lc0 settings do not raise errors) and have no effect. See README "Options".

This module imports nothing heavy: `uci` is answered before numpy, chess or numba load.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional

from .values import BadValue, parse_bool, parse_choice, parse_float, parse_int


class OptionError(ValueError):
    """A bad option name or value (one line, naming the option and what is allowed)."""


# the backends by name: the one list (backends/factory.py's BACKEND_NAMES and the commands read it)
BACKENDS = ("auto", "rocm-auto", "rocm", "rocm-fp16", "cpu", "random", "trivial")
SCORE_TYPES = ("centipawn", "centipawn_with_drawscore", "centipawn_2019", "centipawn_2018", "win_percentage",
               "Q", "W-L", "WDL_mu")
DEFAULT_CONFIG_FILE = "lc0-rocm.config"


@dataclass(frozen=True)
class Spec:
    """One option: kind is check, spin, combo, string or float (UCI shows floats as strings)."""

    name: str
    kind: str
    default: object
    flag: str = ""  # the long flag without dashes ("" for UCI-only options)
    short: str = ""
    min: Optional[float] = None
    max: Optional[float] = None
    choices: tuple = ()
    help: str = ""
    hidden: bool = False

    def parse(self, raw) -> object:
        """The typed value of `raw` (str, or already typed), or OptionError (values.py's rules)."""
        try:
            if self.kind == "check":
                return parse_bool(raw)
            if self.kind == "spin":
                return parse_int(raw, self.min, self.max)
            if self.kind == "float":
                return parse_float(raw, self.min, self.max)
            if self.kind == "combo":
                return parse_choice(raw, self.choices)
        except BadValue as e:
            raise OptionError(f"option {self.name}: {e}") from None
        return str(raw).strip()

    def declaration(self, value) -> str:
        """The `option name ... type ... default <value>` line; the default shown is the current value,
        as lc0 shows the value a flag gave."""
        if self.kind == "check":
            shown = "true" if value else "false"
        elif self.kind == "float":
            shown = f"{value:.6f}"
        else:
            shown = str(value)
        kind = "string" if self.kind == "float" else self.kind
        text = f"option name {self.name} type {kind} default {shown}".rstrip()
        if self.kind == "spin":
            text += f" min {int(self.min)} max {int(self.max)}"
        if self.kind == "combo":
            text += "".join(f" var {c}" for c in self.choices)
        return text


def _f(name, default, lo, hi, flag="", help="", hidden=False):
    return Spec(name, "float", default, flag, min=lo, max=hi, help=help, hidden=hidden)


def _i(name, default, lo, hi, flag="", help="", short="", hidden=False):
    return Spec(name, "spin", default, flag, short, min=lo, max=hi, help=help, hidden=hidden)


def _b(name, default, flag="", help="", short="", hidden=False):
    return Spec(name, "check", default, flag, short, help=help, hidden=hidden)


def _c(name, default, choices, flag="", help="", short="", hidden=False):
    return Spec(name, "combo", default, flag, short, choices=tuple(choices), help=help, hidden=hidden)


def _s(name, default="", flag="", help="", short="", hidden=False):
    return Spec(name, "string", default, flag, short, help=help, hidden=hidden)


SPECS: tuple[Spec, ...] = (
    _s("WeightsFile", "<default>", "weights", "network file; <default> is the bundled net", short="w"),
    _c("Backend", "auto", BACKENDS, "backend", "auto: the GPU when usable, else the CPU; rocm, rocm-fp16 and "
       "rocm-auto need a GPU; cpu is the numpy reference; random and trivial are lc0's outputs without a "
       "network (to measure the search alone)", short="b"),
    _s("BackendOptions", "", "backend-opts", "backend options, e.g. gpus=0,1,policy_head=vanilla", short="o"),
    _i("NNCacheSize", 2000000, 0, 999999999, "nncache", "positions kept in the NN cache"),
    _s("LogFile", "", "logfile", "write the UCI dialogue to this file (<stderr>: to the console)", short="l"),
    _s("ConfigFile", DEFAULT_CONFIG_FILE, "config", "file of command-line flags, one per line (read at start)",
       short="c"),
    _b("Ponder", False, help="the GUI may ask the engine to ponder"),
    _s("SyzygyPath", "", "syzygy-paths", f"Syzygy tablebase folders, separated by '{os.pathsep}'", short="s"),
    _b("SyzygyFastPlay", False, "syzygy-fast-play", "with DTZ tables, only the winning moves of shortest DTZ"),
    _i("Threads", 0, 0, 128, "threads", "search threads on one tree, each with a batch of its own (1: each "
       "batch gathered after the last one is evaluated, lc0's deterministic setting; 0: automatic: with a "
       "GPU 3 on a host with more than two cores (two a card with several), with random/trivial one a core "
       "up to 4, else one thread keeping two batches in flight)",
       short="t"),
    _i("TaskWorkers", -1, -1, 128, "task-workers", "helper threads per search thread that share its batch's "
       "row-wise work (extension, evaluation on the host, expansion) while it picks alone; -1: automatic"),
    _i("MinibatchSize", 0, 0, 1024, "minibatch-size", "positions per NN batch; 0: the backend's choice"),
    _f("CPuct", 1.745, 0.0, 100.0, "cpuct", "exploration constant of PUCT"),
    _f("CPuctBase", 38739.0, 1.0, 1e9, "cpuct-base", "visits over which cpuct grows"),
    _f("CPuctFactor", 3.894, 0.0, 1000.0, "cpuct-factor", "growth factor of cpuct"),
    _b("TwoFoldDraws", True, "two-fold-draws", "a repetition inside the search tree is a draw"),
    _b("VerboseMoveStats", False, "verbose-move-stats", "print lc0's per-move table after each search", short="v"),
    _b("LogLiveStats", False, "log-live-stats", "print the per-move table with every info line (Nibbler)"),
    _c("FpuStrategy", "reduction", ("reduction", "absolute"), "fpu-strategy",
       "value of an unvisited move: parent's Q minus FpuValue (reduction) or FpuValue itself (absolute)"),
    _f("FpuValue", 0.330, -100.0, 100.0, "fpu-value", "see FpuStrategy"),
    _c("FpuStrategyAtRoot", "same", ("reduction", "absolute", "same"), "fpu-strategy-at-root",
       "FpuStrategy at the root (same: as elsewhere)", hidden=True),
    _f("FpuValueAtRoot", 1.0, -100.0, 100.0, "fpu-value-at-root", "FpuValue at the root (unless same)",
       hidden=True),
    _i("CacheHistoryLength", 0, 0, 7, "cache-history-length",
       "plies of history in the NN cache key (0, lc0's: the current position only; 7: the whole network "
       "input, so a cached evaluation is always the one the network would give)"),
    _i("MaxCollisionEvents", 917, 1, 65536, "max-collision-events",
       "declared by lc0 0.32 but not read by its search; accepted, no effect here either"),
    _i("MaxCollisionVisits", 80000, 1, 100000000, "max-collision-visits", "collision visits allowed per batch"),
    _i("MaxCollisionVisitsScalingStart", 28, 1, 100000, "max-collision-visits-scaling-start",
       "tree size where the collision allowance starts growing from 1"),
    _i("MaxCollisionVisitsScalingEnd", 145000, 0, 100000000, "max-collision-visits-scaling-end",
       "tree size where it reaches MaxCollisionVisits (0: no scaling)"),
    _f("MaxCollisionVisitsScalingPower", 1.25, 0.01, 100.0, "max-collision-visits-scaling-power",
       "curvature of that growth"),
    _b("OutOfOrderEval", True, "out-of-order-eval",
       "terminals and cache hits are backed up during gathering (false: with the batch)"),
    _f("MaxOutOfOrderEvalsFactor", 2.4, 0.0, 100.0, "max-out-of-order-evals-factor",
       "out-of-order evaluations per batch, times MinibatchSize"),
    _b("StickyEndgames", True, "sticky-endgames", "proven results propagate up the tree"),
    _i("MultiPV", 1, 1, 500, "multipv", "lines shown in info"),
    _b("PerPVCounters", False, "per-pv-counters", "nodes in info per line instead of the total"),
    _c("ScoreType", "WDL_mu", SCORE_TYPES, "score-type", "what `score cp` shows"),
    _f("MovesLeftMaxEffect", 0.0345, 0.0, 1.0, "moves-left-max-effect", "largest moves-left bonus"),
    _f("MovesLeftThreshold", 0.8, 0.0, 1.0, "moves-left-threshold", "|Q| above which the bonus applies"),
    _f("MovesLeftSlope", 0.0027, 0.0, 1.0, "moves-left-slope", "bonus per move of difference"),
    _f("MovesLeftConstantFactor", 0.0, -1.0, 1.0, "moves-left-constant-factor", "constant part of the bonus"),
    _f("MovesLeftScaledFactor", 1.6521, -2.0, 2.0, "moves-left-scaled-factor", "part scaled by |Q|"),
    _f("MovesLeftQuadraticFactor", -0.6521, -1.0, 1.0, "moves-left-quadratic-factor", "part scaled by Q²"),
    _f("DrawScore", 0.0, -1.0, 1.0, "draw-score", "value of a draw for the side to move at the root "
       "(-1: Armageddon for that side)"),
    _c("ContemptMode", "play", ("play", "white_side_analysis", "black_side_analysis", "disable"), "contempt-mode",
       "which side the contempt favours: play = the side to move (off for go infinite)"),
    _s("Contempt", "", "contempt", "Elo advantage for the WDL rescaling: a number, or name=value entries "
       "matched against UCI_Opponent; default UCI_RatingAdv"),
    _f("ContemptMaxValue", 420.0, 0.0, 10000.0, "contempt-max-value", "largest contempt used", hidden=True),
    _f("WDLCalibrationElo", 0.0, 0.0, 10000.0, "wdl-calibration-elo",
       "Elo of the side to move (0: keep the net's draw rate, the accurate model)"),
    _f("WDLContemptAttenuation", 1.0, -10.0, 10.0, "wdl-contempt-attenuation", "scales the contempt",
       hidden=True),
    _f("WDLMaxS", 1.4, 0.0, 10.0, "wdl-max-s", "cap on the WDL model's spread", hidden=True),
    _f("WDLEvalObjectivity", 1.0, 0.0, 1.0, "wdl-eval-objectivity",
       "1: the reported score leaves contempt out; 0: reports the rescaled WDL"),
    _f("WDLDrawRateTarget", 0.0, 0.0, 0.999, "wdl-draw-rate-target", "draw rate to rescale to (0: none)",
       hidden=True),
    _f("WDLDrawRateReference", 0.5, 0.001, 0.999, "wdl-draw-rate-reference", "the net's own draw rate"),
    _f("WDLBookExitBias", 0.65, -2.0, 2.0, "wdl-book-exit-bias", "opening bias of the accurate model",
       hidden=True),
    _f("NodesPerSecondLimit", 0.0, 0.0, 1e6, "nps-limit", "cap on nodes per second (0: none)"),
    _s("UCI_Opponent", "", help="the GUI's opponent description (matched by Contempt)"),
    _f("UCI_RatingAdv", 0.0, -10000.0, 10000.0, help="Elo advantage over the opponent: the default contempt"),
    _i("SolidTreeThreshold", 100, 1, 2000000000, "solid-tree-threshold",
       "visits from which VerboseMoveStats shows every child (lc0 solidifies such nodes)"),
    _f("SmartPruningFactor", 1.33, 0.0, 10.0, "smart-pruning-factor",
       "stop early when no other move can become best (0: off)"),
    _i("SmartPruningMinimumBatches", 0, 0, 10000, "smart-pruning-minimum-batches",
       "batches before smart pruning may stop a search"),
    _i("RamLimitMb", 0, 0, 100000000, "ramlimit-mb", "stop a search when tree and cache reach this size (MB)"),
    _i("MoveOverheadMs", 200, 0, 100000000, "move-overhead", "time kept back per move for the GUI and I/O"),
    _s("TimeManager", "legacy", "time-manager", "legacy, smooth, alphazero or simple, with settings: "
       "legacy(steepness=7.0)"),
    _b("UCI_Chess960", False, "chess960", "castling as king-takes-rook"),
    _b("UCI_ShowWDL", False, "show-wdl", "show win/draw/loss per mille"),
    _b("UCI_ShowMovesLeft", False, "show-movesleft", "show the expected moves left"),
    _f("PolicyTemperature", 1.359, 0.1, 10.0, "policy-softmax-temp", "softmax temperature of the priors"),
    _c("HistoryFill", "fen_only", ("no", "fen_only", "always"), "history-fill-new",
       "synthesize missing history planes: never, for a FEN start, always"),
)

# lc0 options with no counterpart here (its C++ worker threads, task splitting, spin locks,
# prefetching): accepted from setoption and flags, no effect, not listed by `uci`.
COMPATIBLE_ONLY: tuple[Spec, ...] = (
    _i("MaxConcurrentSearchers", 1, 0, 128, "max-concurrent-searchers"),
    _i("MinimumProcessingWork", 20, 2, 100000, "minimum-processing-work"),
    _i("MinimumPickingWork", 1, 1, 100000, "minimum-picking-work"),
    _i("MinimumRemainingPickingWork", 20, 0, 100000, "minimum-remaining-picking-work"),
    _i("MinimumPerTaskProcessing", 8, 1, 100000, "minimum-per-task-processing"),
    _i("IdlingMinimumWork", 0, 0, 10000, "idling-minimum-work"),
    _i("ThreadIdlingThreshold", 1, 0, 128, "thread-idling-threshold"),
    _b("SearchSpinBackoff", False, "search-spin-backoff"),
    _i("MaxPrefetch", 32, 0, 1024, "max-prefetch"),
)

ALL_SPECS = SPECS + COMPATIBLE_ONLY
# the options lc0 0.32.1 declares in its instamove modes (`lc0 policyhead`, then `uci`)
INSTAMOVE_OPTIONS = ("LogFile", "ConfigFile", "Ponder", "SyzygyPath", "UCI_Chess960", "UCI_ShowWDL",
                     "UCI_ShowMovesLeft", "PolicyTemperature", "HistoryFill", "WeightsFile", "Backend",
                     "BackendOptions", "NNCacheSize")
_BY_NAME = {s.name.lower(): s for s in ALL_SPECS}
_BY_FLAG = {s.flag: s for s in ALL_SPECS if s.flag}
_BY_SHORT = {s.short: s for s in ALL_SPECS if s.short}


def spec(name: str) -> Spec:
    """The option called `name` (any case), or OptionError."""
    s = _BY_NAME.get(name.strip().lower())
    if s is None:
        raise OptionError(f"unknown option {name!r}")
    return s


def default(name: str):
    """The default of option `name`: the one table of lc0's defaults that the search's parameters
    (search/params.py) and the leaf evaluator (search/leaf_evaluator.py) read theirs from."""
    return spec(name).default


class Options:
    """Current option values by name (case-insensitive), typed."""

    def __init__(self):
        self.values = {s.name: s.default for s in ALL_SPECS}

    def __getitem__(self, name: str):
        return self.values[spec(name).name]

    def set(self, name: str, raw) -> tuple[str, object]:
        """Parse and store; returns (canonical name, value)."""
        s = spec(name)
        value = s.parse(raw)
        self.values[s.name] = value
        return s.name, value

    def declarations(self) -> list[str]:
        return [s.declaration(self.values[s.name]) for s in SPECS if not s.hidden]


# --------------------------------------------------------------------------------------------
# Command-line flags and config files


def parse_flags(argv: Iterable[str], extra_specs: tuple = ()) -> tuple[list[tuple[str, object]], dict]:
    """lc0-style flags → ([(option name, value), ...] in order, {"help": bool, "show_hidden": bool}).
    `extra_specs`: a command's own flags (Specs that are no engine option), parsed the same way.

    OptionError (one line) for an unknown flag, a missing value or a bad value."""
    by_flag = {**_BY_FLAG, **{s.flag: s for s in extra_specs}}
    args = list(argv)
    out: list[tuple[str, object]] = []
    extra = {"help": False, "show_hidden": False}
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a in ("-h", "--help"):
            extra["help"] = True
            continue
        if a == "--show-hidden":
            extra["show_hidden"] = True
            continue
        if a.startswith("--"):
            body = a[2:]
            name, eq, value = body.partition("=")
            s = by_flag.get(name)
            if s is None and name.startswith("no-") and name[3:] in by_flag and by_flag[name[3:]].kind == "check":
                if eq:
                    raise OptionError(f"flag --{name} takes no value")
                out.append((by_flag[name[3:]].name, False))
                continue
            if s is None:
                raise OptionError(f"unknown flag {a.split('=')[0]!r} (see --help)")
            if s.kind == "check" and not eq:
                out.append((s.name, True))
                continue
            if not eq:
                if i >= len(args):
                    raise OptionError(f"flag --{name} needs a value")
                value = args[i]
                i += 1
            out.append((s.name, _flag_value(s, value, f"--{name}")))
        elif a.startswith("-") and len(a) >= 2:
            s = _BY_SHORT.get(a[1])
            if s is None:
                raise OptionError(f"unknown flag {a[:2]!r} (see --help)")
            if s.kind == "check":
                if len(a) > 2:
                    raise OptionError(f"flag {a[:2]} takes no value")
                out.append((s.name, True))
                continue
            value = a[2:].lstrip("=")
            if not value:
                if i >= len(args):
                    raise OptionError(f"flag {a} needs a value")
                value = args[i]
                i += 1
            out.append((s.name, _flag_value(s, value, a[:2])))
        else:
            raise OptionError(f"unexpected argument {a!r} (flags look like --threads=2; see --help)")
    return out, extra


def _flag_value(s: Spec, raw: str, flag: str):
    try:
        return s.parse(raw)
    except OptionError as e:
        raise OptionError(f"flag {flag}: {str(e).split(': ', 1)[-1]}") from None


def read_config(path: str) -> list[str]:
    """The flags in a config file: one per line, blank lines and `#` comments skipped."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    flags = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        flags.append(line)  # one argument per line: a path may hold spaces
    return flags


def settings_from_command_line(argv: Iterable[str], extra_specs: tuple = ()) -> tuple[list[tuple[str, object]], dict]:
    """Flags from the command line and the config file it names (or the default one, when present):
    config-file flags first, so the command line wins. OptionError for a named config file that is
    missing, or any bad flag (the config file's errors name the file). `extra_specs`: as parse_flags'
    (on the command line only)."""
    settings, extra = parse_flags(argv, extra_specs)
    config = [v for n, v in settings if n == "ConfigFile"]
    path = config[-1] if config else DEFAULT_CONFIG_FILE
    if path and (config or os.path.exists(path)):
        try:
            lines = read_config(path)
        except OSError as e:
            raise OptionError(f"config file {path}: {e.strerror}") from None
        try:
            from_file, _ = parse_flags(lines)
        except OptionError as e:
            raise OptionError(f"config file {path}: {e}") from None
        settings = from_file + settings
    return settings, extra


def help_text(show_hidden: bool = False) -> str:
    """What `lc0-rocm --help` prints: every flag with its UCI option, default and range."""
    lines = ["Usage: lc0-rocm [flags...]   (speaks UCI on stdin/stdout)",
             "       lc0-rocm COMMAND ...  (eval, describenet, validate, backendbench, ...: lc0-rocm COMMAND --help)",
             "",
             "Flags (each sets the UCI option in brackets; --no-FLAG turns a true/false flag off):",
             "  -h, --help          show this help and exit",
             "      --show-hidden   with --help: also the hidden options"]
    for s in SPECS:
        if s.hidden and not show_hidden:
            continue
        if s.flag:
            head = (f"-{s.short}, " if s.short else "    ") + "--" + ("[no-]" if s.kind == "check" else "") + s.flag
            if s.kind == "spin":
                head += f"={int(s.min)}..{int(s.max)}"
            elif s.kind == "float":
                head += f"={s.min:g}..{s.max:g}"
            elif s.kind == "combo":
                head += "=CHOICE"
            elif s.kind == "string":
                head += "=STRING"
        else:
            head = "    (UCI option only)"
        lines.append("  " + head)
        if s.help:
            lines.append("        " + s.help)
        tail = f"[UCI: {s.name}"
        if s.default not in ("", None):
            tail += f"  DEFAULT: {s.declaration(s.default).split(' default ', 1)[1].split(' min ')[0].split(' var ')[0]}"
        if s.kind == "combo":
            tail += f"  VALUES: {','.join(s.choices)}"
        lines.append("        " + tail + "]")
    names = ", ".join(s.name for s in COMPATIBLE_ONLY)
    lines += ["", f"Accepted for compatibility with lc0, no effect here: {names}."]
    return "\n".join(lines)
