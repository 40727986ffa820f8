"""The engine's command line as a GUI or a user starts it: lc0's flags, --help, the config file,
LogFile, UCI alone on stdout, and `uciok` before anything heavy is imported."""

import re
import subprocess
import sys
from pathlib import Path

import chess.engine
import pytest

from lc0_rocm import engine_options as eo

WEIGHTS = Path(__file__).resolve().parent.parent / "weights" / "t82-small-pemap.pb.gz"
LC0_FLAGS_HELP = Path(__file__).resolve().parent / "data" / "lc0-0.32.1-help.txt"


def _run(args, stdin, cwd=None):
    return subprocess.run([sys.executable, "-m", "lc0_rocm.cli", *args], input=stdin, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def _declared(stdout: str) -> dict:
    """{option name: its `default` text} from the `uci` answer."""
    out = {}
    for line in stdout.splitlines():
        m = re.match(r"option name (.+?) type \S+ default ?(.*?)(?: min | var |$)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_bare_and_flag_only_invocations_speak_uci():
    for args in ([], ["-w", str(WEIGHTS)], ["--weights", str(WEIGHTS)], ["uci"]):
        proc = _run(args, "uci\nquit\n")
        assert proc.returncode == 0, proc.stderr
        assert "uciok" in proc.stdout.splitlines()


def test_stdout_is_uci_only_and_the_notes_go_to_stderr():
    proc = _run(["-w", str(WEIGHTS), "--backend=cpu"], "uci\nisready\nquit\n")
    lines = proc.stdout.splitlines()
    assert all(x.split()[0] in ("id", "option", "uciok", "readyok") for x in lines), lines
    assert lines[-1] == "readyok"
    assert f"lc0-rocm: Loading weights file from: {WEIGHTS}" in proc.stderr.splitlines()


def test_python_chess_sees_no_unexpected_output(caplog):
    """python-chess logs every line it did not ask for; lc0 gives it none at start-up."""
    with caplog.at_level("WARNING", logger="chess.engine"):
        with chess.engine.SimpleEngine.popen_uci([sys.executable, "-m", "lc0_rocm.cli", "-w", str(WEIGHTS),
                                                  "--backend=cpu"], stderr=subprocess.DEVNULL) as engine:
            engine.ping()
            result = engine.play(chess.Board(), chess.engine.Limit(nodes=2))
            assert result.move in chess.Board().legal_moves
    assert not [r for r in caplog.records if "Unexpected" in r.getMessage()], caplog.text


def test_every_option_is_a_flag_in_lcos_spelling():
    proc = _run(["--threads=2", "--cpuct", "2.5", "-w", str(WEIGHTS), "--no-two-fold-draws", "--show-wdl",
                 "--syzygy-paths=/tmp", "--nncache=12345", "--fpu-strategy=absolute", "--draw-score=-0.25",
                 "--time-manager=smooth", "-t3", "--max-prefetch=0"], "uci\nquit\n")
    assert proc.returncode == 0, proc.stderr
    got = _declared(proc.stdout)
    assert got["Threads"] == "3"  # the last of --threads=2 and -t3
    assert got["CPuct"] == "2.500000"
    assert got["WeightsFile"] == str(WEIGHTS)  # the net in use, not the bundled one
    assert got["TwoFoldDraws"] == "false" and got["UCI_ShowWDL"] == "true"
    assert got["SyzygyPath"] == "/tmp" and got["NNCacheSize"] == "12345"
    assert got["FpuStrategy"] == "absolute" and got["DrawScore"] == "-0.250000"
    assert got["TimeManager"] == "smooth"
    assert "MaxPrefetch" not in got  # accepted for lc0 compatibility, not listed


def test_weights_file_shows_the_bundled_net_by_default():
    got = _declared(_run([], "uci\nquit\n").stdout)
    assert got["WeightsFile"].endswith("bt-small-smolgen-pedense.pb.gz") and Path(got["WeightsFile"]).is_file()
    assert got["Backend"] == "auto" and got["NNCacheSize"] == "2000000"


def test_uci_lists_every_lc0_option_that_applies():
    """The options lc0 0.32.1 lists (`lc0 --help`, saved in tests/data) are all declared here, but
    for those `engine_options.COMPATIBLE_ONLY` names as having no counterpart (worker threads)."""
    lc0_names = set(re.findall(r"\[UCI: (\w+)", LC0_FLAGS_HELP.read_text()))
    ours = set(_declared(_run([], "uci\nquit\n").stdout))
    skipped = {s.name for s in eo.COMPATIBLE_ONLY}
    assert len(lc0_names) >= 60
    assert lc0_names - ours <= skipped, sorted(lc0_names - ours - skipped)


def test_help_lists_the_flags():
    proc = _run(["--help"], "")
    assert proc.returncode == 0
    for flag in ("--threads=0..128", "-t, --threads", "--syzygy-paths=STRING", "--logfile=STRING", "-w, --weights",
                 "--[no-]two-fold-draws", "--time-manager=STRING", "[UCI: NNCacheSize  DEFAULT: 2000000]"):
        assert flag in proc.stdout, flag
    assert "--fpu-value-at-root" not in proc.stdout
    assert "--fpu-value-at-root" in _run(["--help", "--show-hidden"], "").stdout
    assert "eval" in proc.stdout and "backendbench" in proc.stdout  # the sub-commands too


def test_bad_flags_get_one_line_and_a_nonzero_exit():
    for args, text in ((["--no-such-flag"], "unknown flag '--no-such-flag'"),
                       (["--threads=abc"], "flag --threads: expected an integer"),
                       (["--threads=999"], "out of range [0, 128]"),
                       (["--threads"], "needs a value"),
                       (["--backend=cuda"], "is not one of"),
                       (["--config=/nonexistent/lc0.cfg"], "config file /nonexistent/lc0.cfg")):
        proc = _run(args, "")
        assert proc.returncode == 2, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and text in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_config_file_sets_options_and_the_command_line_wins(tmp_path):
    cfg = tmp_path / "my.config"
    cfg.write_text(f"# my settings\n--cpuct=3.0\n--weights={WEIGHTS}\n\n--threads=4\n")
    got = _declared(_run([f"--config={cfg}", "--threads=1"], "uci\nquit\n").stdout)
    assert got["CPuct"] == "3.000000" and got["WeightsFile"] == str(WEIGHTS) and got["Threads"] == "1"
    # the default config file is read from the working folder when present
    (tmp_path / eo.DEFAULT_CONFIG_FILE).write_text("--multipv=3\n")
    assert _declared(_run([], "uci\nquit\n", cwd=tmp_path).stdout)["MultiPV"] == "3"
    (tmp_path / eo.DEFAULT_CONFIG_FILE).write_text("--multipv=nope\n")
    proc = _run([], "uci\nquit\n", cwd=tmp_path)
    assert proc.returncode == 2 and "config file lc0-rocm.config: flag --multipv" in proc.stderr


def test_logfile_records_the_dialogue(tmp_path):
    log = tmp_path / "uci.log"
    proc = _run([f"--logfile={log}", "-w", str(WEIGHTS), "--backend=cpu"],
                "uci\nisready\nposition startpos\ngo nodes 3\nisready\nquit\n")
    assert proc.returncode == 0, proc.stderr
    text = log.read_text()
    assert re.search(r"^\d{4} \d\d:\d\d:\d\d\.\d{6} >> go nodes 3$", text, re.M), text[:500]
    assert re.search(r"<< bestmove \S+", text) and " << uciok" in text
    assert "## lc0-rocm: Loading weights" in text  # the console notes too
    # set from the GUI
    log2 = tmp_path / "second.log"
    _run([], f"setoption name LogFile value {log2}\nisready\nquit\n")
    assert ">> isready" in log2.read_text()


def test_uciok_comes_before_any_heavy_import():
    """The engine answers `uci` without numpy, chess, numba or hip loaded (lc0 answers in ~10 ms);
    they load at the first isready/position/go."""
    code = ("import io, sys; from lc0_rocm.uci import UciEngine; out = io.StringIO(); "
            "e = UciEngine(inp=io.StringIO('uci\\n'), out=out); e.handle('uci'); "
            "assert out.getvalue().rstrip().endswith('uciok'); "
            "print(sorted(m for m in ('numpy', 'chess', 'numba', 'hip') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize("value,ok", [("0.5", True), ("2", False), ("x", False)])
def test_setoption_checks_values(value, ok):
    proc = _run([], f"setoption name DrawScore value {value}\nquit\n")
    errors = [x for x in proc.stdout.splitlines() if x.startswith("info string error")]
    assert (not errors) == ok, proc.stdout


def test_version_is_printed_from_its_one_home():
    """`--version` exits 0 with lc0_rocm.__version__ (lc0_rocm/version.py), which pyproject.toml reads
    instead of a copy."""
    import lc0_rocm

    tomllib = pytest.importorskip("tomllib")
    r = _run(["--version"], "")
    assert r.returncode == 0 and r.stdout == f"lc0-rocm {lc0_rocm.__version__}\n" and r.stderr == "", r
    pyproject = tomllib.loads((WEIGHTS.parent.parent / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and pyproject["project"]["dynamic"] == ["version"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lc0_rocm.version.__version__"}


def test_the_command_line_leaves_its_objects_to_the_process_end():
    """The interpreter's last collections at exit are skipped (gc.freeze at exit): a GUI's `quit` and
    the end of an analysis wait 0.3-0.5 s less (docs/perf.md)."""
    code = "import atexit, gc\natexit.register(lambda: print(gc.get_freeze_count() > 0))\nimport lc0_rocm.cli\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
