"""Output paths and shared argument checks of the command line (issue 10, "Outputs" and "Crashes").

Every subcommand goes through ``check_arguments`` before any input is read: the
tests use the fast ``fpc-sim`` for writes and ``tabular`` with a missing input to
show that a bad output path is refused before the audit would start.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from audit_core.__main__ import main

ROOT = Path(__file__).resolve().parents[3]
FPC = ["fpc-sim", "--population", "100", "--train-size", "50", "--models", "8", "--repeats", "3"]


def _tabular_missing(tmp_path: Path) -> list[str]:
    """A tabular call whose inputs do not exist: any output error must come first."""
    t = str(tmp_path / "absent.csv")
    return ["--quiet", "tabular", "--train", t, "--holdout", t, "--synthetic", t]


def _one_error(capsys: pytest.CaptureFixture[str], rc: int) -> str:
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert len(err.splitlines()) == 1, err
    assert err.startswith("error:")
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--json", ""], "needs a file name"),
        (["--json", "{tmp}"], "is a folder"),
        (["--html", "{tmp}/no/such/folder/r.html"], "does not exist"),
        (["--json", "{tmp}/a.json", "--html", "{tmp}/a.json"], "same file"),
        (["--seed", "-1"], "--seed must be a whole number from 0 to 4,294,967,295"),
        (["--seed", str(2**64)], "--seed"),
        (["--prior", "nan"], "--prior"),
    ],
)
def test_bad_outputs_and_settings_refused_before_reading(extra, words, tmp_path, capsys):
    argv = [*_tabular_missing(tmp_path), *(e.replace("{tmp}", str(tmp_path)) for e in extra)]
    err = _one_error(capsys, main(argv))
    assert words in err
    assert "no file" not in err  # the inputs were never looked at


def test_output_that_is_an_input_is_refused_and_input_kept(tmp_path, capsys):
    train = tmp_path / "train.csv"
    train.write_text("a,b\n1,x\n")
    before = train.read_bytes()
    other_spelling = str(tmp_path / "sub" / ".." / "train.csv")
    (tmp_path / "sub").mkdir()
    hard = tmp_path / "hardlink.csv"
    os.link(train, hard)
    for out in (str(train), other_spelling, str(hard)):
        argv = ["--quiet", "tabular", "--train", str(train), "--holdout", str(train), "--synthetic", str(train)]
        err = _one_error(capsys, main([*argv, "--html", out]))
        assert "is the input file" in err
    assert train.read_bytes() == before


def test_symlink_output_is_refused_and_target_untouched(tmp_path, capsys):
    target = tmp_path / "precious.json"
    target.write_text("keep me")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    err = _one_error(capsys, main(["--quiet", *FPC, "--json", str(link)]))
    assert "symbolic link" in err
    assert link.is_symlink()
    assert target.read_text() == "keep me"


def test_regular_output_replaced_atomically_with_its_permissions(tmp_path, capsys):
    out = tmp_path / "fpc.json"
    out.write_text("old")
    out.chmod(0o640)
    assert main(["--quiet", *FPC, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["fpc"] == pytest.approx(0.5)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fpc.json"]  # no temporary file left


def test_dev_full_write_error_is_one_sentence(capsys):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    err = _one_error(capsys, main(["--quiet", *FPC, "--json", "/dev/full"]))
    assert "No space left" in err
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)  # still the device, not replaced by a file


def test_fifo_is_written_directly(tmp_path):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["--quiet", *FPC, "--json", str(fifo)]) == 0
    reader.join(timeout=30)
    assert json.loads(got[0])["fpc"] == pytest.approx(0.5)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.slow
def test_process_substitution_and_quiet_after_subcommand():
    """``--json >(cat)`` is /dev/fd/N on a pipe: written in place; ``--quiet`` after the subcommand works."""
    r, w = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "audit_core", *FPC, "--quiet", "--json", f"/dev/fd/{w}"],
        cwd=ROOT, pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        payload = pipe.read()
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err == ""  # --quiet after the subcommand silenced progress
    assert json.loads(payload)["fpc"] == pytest.approx(0.5)
    assert "FPC" in out


@pytest.mark.slow
def test_broken_pipe_on_stdout_is_quiet():
    """``python -m audit_core ... | head -0``: the reader is gone before the summary is printed."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "audit_core", "--quiet", *FPC], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert "Traceback" not in err
    assert "BrokenPipe" not in err
    assert proc.returncode == 0


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["fabrication", "--steps", "100000000000000000000"], "--steps must be a whole number from 1 to 500"),
        (["fabrication", "--lambda", "1e9"], "--lambda"),
        (["generate", "--train", "x.csv", "--generator", "bootstrap", "--rows", "10000000000", "--out", "o.csv"], "--rows"),
        (["fpc-sim", "--population", "100000000000", "--train-size", "5"], "--population"),
        (["fpc-sim", "--population", "100", "--train-size", "5", "--repeats", "0"], "--repeats"),
        (["lira", "--data", "x.csv", "--target", "y", "--models", "100000"], "--models"),
    ],
)
def test_every_count_is_bounded_with_the_limit_in_the_message(argv, words, capsys):
    err = _one_error(capsys, main(["--quiet", *argv]))
    assert words in err
    assert "from" in err
    assert "to" in err


def test_a_count_argparse_cannot_parse_names_its_bound(capsys):
    """``--steps 1e20`` is not an integer for argparse; the message still gives the limit."""
    with pytest.raises(SystemExit) as exit_info:
        main(["fabrication", "--quiet", "--steps", "1e20"])
    err = _one_error(capsys, exit_info.value.code)
    assert "--steps must be a whole number from 1 to 500" in err


# ----------------------------------------------------------------------------- issue 21: the helpers themselves
def test_write_outputs_is_all_or_none(tmp_path):
    from audit_core.common.errors import InputError
    from audit_core.common.outputs import write_outputs

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    old = tmp_path / "old.json"
    old.write_text("previous run")
    files = [("--json", tmp_path / "new.json", "{}"), ("--records", old, "a,b\n"), ("--html", "/dev/full", "<html>")]
    with pytest.raises(InputError, match=r"^Writing --html /dev/full failed \(No space left on device\)\.$"):
        write_outputs(files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]  # nothing new, no temporary file
    assert old.read_text() == "previous run"
    write_outputs(files[:2])
    assert (tmp_path / "new.json").read_text() == "{}"
    assert old.read_text() == "a,b\n"


def test_a_fifo_nobody_reads_waits_a_bounded_time(tmp_path, monkeypatch):
    from audit_core.common import outputs
    from audit_core.common.errors import InputError

    monkeypatch.setattr(outputs, "FIFO_WAIT_S", 0.5)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(InputError, match=r"nothing read from this pipe for 0\.5 s; start its reader first"):
        outputs.write_outputs([("--json", fifo, "{}"), ("--records", tmp_path / "r.csv", "x\n")])
    assert 0.4 < time.monotonic() - start < 10
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.json"]
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    outputs.write_outputs([("--json", fifo, "{}")])  # with a reader, written as before
    reader.join(timeout=30)
    assert got == [b"{}"]


def test_an_output_inside_an_input_folder_is_refused(tmp_path):
    from audit_core.common.errors import InputError
    from audit_core.common.outputs import check_outputs

    folder = tmp_path / "images"
    (folder / "sub").mkdir(parents=True)
    (folder / "labels.csv").write_text("file,label\n")
    for name in ("labels.csv", "i0.png", "sub/new.json"):
        with pytest.raises(InputError, match=f"is inside the input folder {folder}, so it would become one of the inputs"):
            check_outputs({"--json": str(folder / name)}, [str(folder)])
    check_outputs({"--json": str(tmp_path / "labels.json")}, [str(folder)])  # next to the folder: fine


def test_an_input_path_the_system_refuses_is_one_short_sentence():
    from audit_core.common.errors import InputError
    from audit_core.common.outputs import check_inputs

    with pytest.raises(InputError, match=r"^--images /tmp/a{72}\.\.\. cannot be used \(File name too long\)\.$"):
        check_inputs({"--images": "/tmp/" + "a" * 5000})
    check_inputs({"--train": "/tmp/no-such-file.csv", "--model": None})  # missing: left to the input's reader


def test_csv_text_neutralises_formulas_in_text_cells_only():
    import pandas as pd

    from audit_core.common.outputs import csv_text

    frame = pd.DataFrame({
        "text": ["=cmd|' /C calc'!A0", "=HYPERLINK(\"http://x\",\"y\")", "+SUM(A1)", "@SUM(A1)", "-2+3", "\tx", "-5",
                 "+1e3", "plain", None],
        "number": [-1.5, -2.0, 3.0, 4.0, 5.0, 6.0, -7.0, 8.0, 9.0, 10.0],
        "category": pd.Categorical(["=1+1", "a", "a", "a", "a", "a", "a", "a", "a", "a"]),
    })  # fmt: skip
    back = pd.read_csv(io.StringIO(csv_text(frame)), keep_default_na=False, dtype={"text": str})
    assert back["text"].tolist() == ["'=cmd|' /C calc'!A0", "'=HYPERLINK(\"http://x\",\"y\")", "'+SUM(A1)", "'@SUM(A1)",
                                     "'-2+3", "'\tx", "-5", "+1e3", "plain", ""]  # fmt: skip
    assert back["number"].tolist() == frame["number"].tolist()  # a negative number stays a number
    assert back["category"][0] == "'=1+1"
    assert frame["text"][0] == "=cmd|' /C calc'!A0"  # the caller's frame is untouched


# ----------------------------------------------------------------------------- issue 21: the CLI writes all or none
def _score_file(tmp_path: Path, ids: list[str] | None = None, attacks: list[str] | None = None) -> Path:
    n = 40
    ids = ids or [f"r{i}" for i in range(n)]
    attacks = attacks or ["a"] * len(ids)
    rows = [f"{rid},{att},{-0.5 + i / 10:.2f},{i % 2}" for i, (rid, att) in enumerate(zip(ids, attacks, strict=True))]
    path = tmp_path / "scores.csv"
    path.write_text("record_id,attack,score,is_member\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
@pytest.mark.parametrize("late", ["--records", "--html"])
def test_a_failed_later_write_leaves_no_earlier_output(late, tmp_path, capsys):
    scores = _score_file(tmp_path)
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    old.write_text("previous run")
    for out in (new, old):
        err = _one_error(capsys, main(["--quiet", "scores", "--scores", str(scores), "--json", str(out), late, "/dev/full"]))
        assert f"Writing {late} /dev/full failed (No space left on device)" in err
    assert not new.exists()  # created by the failed run: removed
    assert old.read_text() == "previous run"  # replaced only if every write succeeds
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json", "scores.csv"]  # no temporary file left


@pytest.mark.slow
def test_pdf_without_chromium_writes_nothing(tmp_path):
    scores = _score_file(tmp_path)
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}  # no Chromium on this PATH
    proc = subprocess.run(
        [sys.executable, "-m", "audit_core", "--quiet", "scores", "--scores", str(scores), "--json",
         str(tmp_path / "r.json"), "--records", str(tmp_path / "r.csv"), "--pdf", str(tmp_path / "r.pdf")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "error: PDF export needs a local Chromium (apt-get install chromium); the HTML report works without it."
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.csv"]


def test_every_output_written_when_all_writes_succeed(tmp_path, capsys):
    scores = _score_file(tmp_path)
    outs = {flag: tmp_path / f"r{flag.strip('-')}" for flag in ("--json", "--records", "--html")}
    assert main(["--quiet", "scores", "--scores", str(scores), *(x for f, p in outs.items() for x in (f, str(p)))]) == 0
    assert json.loads(outs["--json"].read_text())["n_rows"] == 40
    assert outs["--records"].read_text().startswith("attack,record_id,score,is_member")
    assert "<html" in outs["--html"].read_text()[:200].lower()


def test_fifo_nobody_reads_is_one_sentence_after_a_bounded_wait(tmp_path, capsys, monkeypatch):
    from audit_core.common import outputs

    monkeypatch.setattr(outputs, "FIFO_WAIT_S", 0.5)
    fifo, other = tmp_path / "pipe.json", tmp_path / "records.csv"
    os.mkfifo(fifo)
    scores = _score_file(tmp_path)
    start = time.monotonic()
    rc = main(["--quiet", "scores", "--scores", str(scores), "--json", str(fifo), "--records", str(other)])
    assert time.monotonic() - start < 30
    err = _one_error(capsys, rc)
    assert "nothing read from this pipe for 0.5 s; start its reader first" in err
    assert not other.exists()
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("name", ["labels.csv", "i0.png", "sub/new.json"])
def test_output_inside_an_input_folder_is_refused_before_reading(name, tmp_path, capsys):
    folder = tmp_path / "images"
    (folder / "sub").mkdir(parents=True)
    (folder / "labels.csv").write_text("file,label,is_member\ni0.png,0,1\n")
    (folder / "i0.png").write_bytes(b"not really a png")
    before = {p: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    flag = "--json" if name.endswith((".csv", ".json")) else "--html"
    err = _one_error(capsys, main(["--quiet", "fabrication", "--images", str(folder), flag, str(folder / name)]))
    assert f"{flag} {folder / name} is inside the input folder {folder}, so it would become one of the inputs" in err
    assert {p: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
    assert not (folder / "sub" / "new.json").exists()


LONG = "/tmp/" + "a" * 5000 + ".csv"


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["tabular", "--train", LONG, "--holdout", LONG, "--synthetic", LONG],
        ["compare", "--data", LONG],
        ["lira", "--data", LONG, "--target", "y"],
        ["fabrication", "--images", LONG],
        ["fabrication", "--images", "/tmp/" + "d" * 5000],
        ["scores", "--scores", LONG],
        ["generate", "--train", LONG, "--generator", "bootstrap", "--rows", "10", "--out", "/tmp/o.csv"],
        ["fpc-sim", "--population", "100", "--train-size", "50", "--json", LONG],
    ],
)
def test_a_path_too_long_for_the_system_is_one_short_sentence(argv, capsys):
    err = _one_error(capsys, main(["--quiet", *argv]))
    assert err.endswith("cannot be used (File name too long).")
    assert len(err) < 200


def test_scores_records_csv_has_no_live_formula(tmp_path, capsys):
    import numpy as np
    import pandas as pd

    ids = ["=cmd|' /C calc'!A0", '=HYPERLINK("http://evil","x")', "+SUM(1)", "@SUM(1)", "-12", *[f"r{i}" for i in range(35)]]
    path = tmp_path / "scores.csv"
    n = np.arange(40)
    frame = pd.DataFrame({"record_id": ids, "attack": "@SUM(1)", "score": n / 10 - 0.5, "is_member": n % 2})
    frame.to_csv(path, index=False)
    out = tmp_path / "records.csv"
    assert main(["--quiet", "scores", "--scores", str(path), "--records", str(out)]) == 0
    import csv

    with out.open(newline="") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    live = [c for c in cells if c[:1] in ("=", "+", "@") or (c[:1] == "-" and not c.lstrip("-").replace(".", "").isdigit())]
    assert not live, live
    assert "'=cmd|' /C calc'!A0" in cells
    assert "'@SUM(1)" in cells
    assert "-12" in cells  # an id that is a plain negative number is left alone
    assert any(c.startswith("-0.") for c in cells)  # negative scores stay numbers
