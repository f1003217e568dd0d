"""Hostile tables (issue 10): each named case, and a fuzz run of a few hundred generated bad tables.

The bad tables come from ``tests/hostile_inputs.py`` (generated, never committed).
The fuzz test runs the CLI's ``main()`` in-process for the bulk (fast) and a few
cases as real ``python -m audit_core`` processes.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from audit_core.__main__ import main
from audit_core.common.alignment import align_tables
from audit_core.common.column_types import infer_column_types
from audit_core.common.errors import InputError
from audit_core.common.table_files import read_table
from tests.hostile_inputs import bad_tables, good_frame, long_cell_csv, parquet_with_index, write_good_tables

ROOT = Path(__file__).resolve().parents[3]
BAD = list(bad_tables(seed=0, per_family=16))


def _argv(paths: dict[str, Path]) -> list[str]:
    return ["--quiet", "tabular", *(x for name, p in paths.items() for x in (f"--{name}", str(p)))]


def test_fuzz_has_a_few_hundred_cases_in_every_family():
    families = {family for family, _ in BAD}
    assert len(BAD) >= 300
    assert len(families) >= 20


@pytest.mark.slow
@pytest.mark.parametrize("role", ["train", "holdout", "synthetic"])
def test_fuzz_bad_tables_exit_2_with_one_line(role, tmp_path, capsys):
    paths = write_good_tables(tmp_path)
    failures = []
    for i, (family, content) in enumerate(BAD[["train", "holdout", "synthetic"].index(role) :: 3]):
        bad = tmp_path / f"bad{i}.{'parquet' if content.startswith(b'PAR1') else 'csv'}"
        bad.write_bytes(content)
        rc = main(_argv({**paths, role: bad}))
        err = capsys.readouterr().err.strip()
        if rc != 2 or len(err.splitlines()) != 1 or not err.startswith("error:") or "Traceback" in err:
            failures.append((family, rc, err[:200]))
    assert not failures, failures[:5]


@pytest.mark.slow
def test_fuzz_sample_as_real_processes(tmp_path):
    paths = write_good_tables(tmp_path)
    picked = {}
    for family, content in BAD:
        if family in ("mixed delimiters", "Parquet binary column", "not UTF-8"):
            picked.setdefault(family, content)
    for family, content in picked.items():
        bad = tmp_path / "bad.bin"
        bad.write_bytes(content)
        proc = subprocess.run(
            [sys.executable, "-m", "audit_core", *_argv({**paths, "train": bad})],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        )
        assert proc.returncode == 2, (family, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1, (family, proc.stderr)
        assert "Traceback" not in proc.stderr


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def test_parquet_binary_column_is_decoded_or_refused_in_one_sentence():
    text = _parquet(pa.table({"a": [1, 2, 3], "b": pa.array([b"x", b"y", None])}))
    assert read_table(text, name="t")["b"].tolist()[:2] == ["x", "y"]
    raw = _parquet(pa.table({"a": [1, 2, 3], "b": pa.array([b"\x00\xff", b"\xfe", b"\x80"])}))
    with pytest.raises(InputError, match="Column 'b' of table 't' holds binary data that is not text"):
        read_table(raw, name="t")
    nested = _parquet(pa.table({"a": [1, 2, 3], "b": pa.array([[1], [2], [3]])}))
    with pytest.raises(InputError, match="not single values"):
        read_table(nested, name="t")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("x;y\n1;a\n2,b\n3;c\n", "line 3 ('2,b') does not match the header: it uses ',' where the header uses ';'"),
        ("x,y\n1,a\n2;b\n", "it uses ';' where the header uses ','"),
        ('x,y\n"1",a\n2|b\n', "it uses '|'"),
        ("x,y\n1,a\n2\n", "fewer fields than the header"),
    ],
)
def test_mixed_delimiters_are_refused(text, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)").replace("|", r"\|")):
        read_table(text.encode(), name="t")


def test_blank_lines_and_trailing_delimiters_still_read():
    assert read_table(b"x,y\n1,a\n\n2,b\n", name="t").shape == (2, 2)
    assert read_table(b"x,y,\n1,a,\n2,b,\n", name="t").shape == (2, 2)
    assert read_table(b"x,y\r\n1,a\r\n", name="t").shape == (1, 2)


def _recoded(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(sex=frame["sex"].map({"Female": "F", "Male": "M"}))


def test_category_codings_that_barely_overlap_are_named():
    train, holdout, synthetic = good_frame(80, 0), _recoded(good_frame(80, 1)), good_frame(80, 2)
    aligned = align_tables(
        {"train": train, "holdout": holdout, "synthetic": synthetic}, types=infer_column_types(train)
    )
    notes = [w for w in aligned.warnings if "coded differently" in w]
    assert len(notes) == 1
    assert "Column 'sex'" in notes[0]
    assert "'holdout'" in notes[0]
    assert "'F'" in notes[0]
    assert "'Female'" in notes[0]
    # The same coding everywhere (and rarer categories missing from a small table) is not flagged.
    same = align_tables({"train": train, "holdout": good_frame(25, 5)}, types=infer_column_types(train))
    assert not [w for w in same.warnings if "coded differently" in w]


def test_category_mismatch_with_synthetic_on_cli_stderr_and_json(tmp_path, capsys):
    paths = write_good_tables(tmp_path)
    _recoded(good_frame(60, 2)).to_csv(paths["synthetic"], index=False)
    out = tmp_path / "out.json"
    assert main([*_argv(paths), "--json", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "coded differently" in line]
    assert len(lines) == 1
    assert lines[0].startswith("warning: Column 'sex'")
    assert "'synthetic'" in lines[0]
    assert any("coded differently" in w for w in json.loads(out.read_text())["warnings"])


def test_fuzz_families_are_each_refused_by_the_loader_or_aligner():
    """Outside the CLI too: every bad table raises InputError (never another exception)."""
    good = good_frame(60)
    types = infer_column_types(good)
    def load(content: bytes) -> None:
        table = read_table(content, name="t")
        align_tables({"train": good, "holdout": good, "t": table}, types=types, min_rows={"t": 20})

    for _family, content in BAD[:: len(BAD) // 60]:
        with pytest.raises(InputError):
            load(content)


@pytest.mark.parametrize("closed", [True, False])
def test_cell_over_the_csv_field_limit_is_one_sentence(closed, tmp_path, capsys):
    frame = good_frame(40)
    with pytest.raises(InputError, match=r"Table 't' has a cell longer than 131,072 characters \(from line 4\)"):
        read_table(long_cell_csv(frame, closed=closed, row=3), name="t")
    paths = write_good_tables(tmp_path)
    paths["holdout"].write_bytes(long_cell_csv(frame, closed=closed))
    assert main(_argv(paths)) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: Table 'holdout' has a cell longer than 131,072 characters")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(("index", "columns"), [
    ("age", ["age", "hours", "sex", "city"]),  # a named index is a column of the data: kept
    (["sex", "city"], ["sex", "city", "age", "hours"]),
    (None, ["age", "hours", "sex", "city"]),  # an unnamed index (pandas' __index_level_0__) is not data: dropped
])
def test_parquet_written_by_pandas_with_an_index_is_read(index, columns):
    frame = good_frame(30)
    table = read_table(parquet_with_index(frame, index), name="t")
    assert table.columns.tolist() == columns
    assert isinstance(table.index, pd.RangeIndex)
    pd.testing.assert_frame_equal(table[frame.columns.tolist()], frame, check_dtype=False)


def test_score_file_with_record_id_as_pandas_index_runs_the_score_check(tmp_path, capsys):
    """The probe's case: scores.set_index("record_id").to_parquet() gave 'Length mismatch'."""
    ids = [f"r{i}" for i in range(40)]
    scores = pd.DataFrame({"record_id": ids, "score": [float(i) for i in range(40)], "is_member": [i % 2 for i in range(40)]})
    path = tmp_path / "scores.parquet"
    path.write_bytes(parquet_with_index(scores, "record_id"))
    records = tmp_path / "records.csv"
    assert main(["--quiet", "scores", "--scores", str(path), "--records", str(records)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert sorted(pd.read_csv(records)["record_id"]) == sorted(ids)


def test_a_path_too_long_for_the_system_is_one_sentence():
    with pytest.raises(InputError, match=r"Table 't': the path '/tmp/aaa.*\.\.\.' cannot be used \(File name too long\)"):
        read_table("/tmp/" + "a" * 5000 + ".csv", name="t")


@pytest.mark.slow
def test_a_header_of_a_million_columns_is_refused_in_seconds(tmp_path, capsys):
    import time

    path = tmp_path / "wide.csv"
    n = 1_000_000
    path.write_text(",".join(f"c{i}" for i in range(n)) + "\n" + ",".join("1" for _ in range(n)) + "\n")
    start = time.perf_counter()
    with pytest.raises(InputError, match=r"1,000,000 columns; the number of columns of a table must be .* to 5,000"):
        read_table(path, name="train")
    assert time.perf_counter() - start < 10
    assert read_table(b"a,b\n1,2\n", name="ok").shape == (1, 2)
