"""Tables: reading (common.table_files), typing (common.column_types) and aligning (common.alignment), bad ones refused."""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audit_core.common.alignment import AlignedTables, align_tables
from audit_core.common.column_types import ColumnTypes, infer_column_types
from audit_core.common.errors import InputError
from audit_core.common.table_files import MAX_UPLOAD_MB, read_table

GOOD_CSV = b"age,sex,income\n30,F,10.5\n41,M,?\n,F,3\n"


# ---------------------------------------------------------------- read_table: good input
def test_read_csv_from_bytes_path_and_file(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes(GOOD_CSV)
    for source in (GOOD_CSV, path, str(path), io.BytesIO(GOOD_CSV)):
        df = read_table(source, name="train")
        assert list(df.columns) == ["age", "sex", "income"]
        assert len(df) == 3
        assert df["income"].isna().tolist() == [False, True, False]  # "?" is missing
        assert np.isnan(df["age"].iloc[2])
        assert list(df.index) == [0, 1, 2]


def test_read_csv_semicolon_bom_and_spaces() -> None:
    data = "\ufeffa; b\n1; x\n2; y\n".encode()
    df = read_table(data, name="t")
    assert list(df.columns) == ["a", "b"]
    assert df["b"].tolist() == ["x", "y"]
    assert df["a"].tolist() == [1, 2]


def test_trailing_delimiter_is_dropped() -> None:
    df = read_table(b"a,b,\n1,x,\n2,y,\n", name="t")
    assert list(df.columns) == ["a", "b"]
    assert df["b"].tolist() == ["x", "y"]


def test_read_parquet_round_trip(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x": [1.5, np.nan, 3.0], "c": ["a", None, "b"]})
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    df = read_table(path, name="synthetic")
    pd.testing.assert_frame_equal(df, frame)
    # content decides the format, not the name
    df2 = read_table(io.BytesIO(path.read_bytes()), name="synthetic")
    pd.testing.assert_frame_equal(df2, frame)


@pytest.mark.slow
def test_sample_adult_reads_and_types() -> None:
    path = Path(__file__).resolve().parents[3] / "sample_data" / "adult.csv"
    if not path.exists():
        pytest.skip("sample_data/adult.csv not committed yet")
    df = read_table(path, name="adult")
    types = infer_column_types(df)
    assert "age" in types.numeric
    assert "sex" in types.categorical


# ---------------------------------------------------------------- read_table: bad input
@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", ["'train'", "empty"]),
        (b"  \n\n", ["'train'", "empty"]),
        (b"a,b,c\n", ["'train'", "no rows"]),
        (b"a,b,a\n1,2,3\n", ["duplicate column", "'a'"]),
        (b"a,,c\n1,2,3\n", ["without a name", "column 2"]),
        (b"a,b\n1,2\n3,4,5,6\n", ["'train'", "not a readable CSV"]),
        (b"a,b\n1,2,3\n4,5,6\n", ["'train'", "more fields than the header"]),
        (b"a,b,\n1,2,5\n", ["without a name", "column 3"]),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", ["binary"]),
        ("name,city\nJos\u00e9,K\u00f6ln\n".encode("latin-1"), ["not UTF-8", "0xe9", "line 2", "re-save", "UTF-8"]),
        (pickle.dumps(pd.DataFrame({"a": [1]})), ["pickle"]),
        (b"PK\x03\x04rest-of-a-zip", ["Excel", "CSV"]),
        (b"\x1f\x8b\x08\x00junk", ["compressed"]),
        (b"PAR1garbagePAR1", ["Parquet", "cannot be read"]),
    ],
)
def test_read_table_refuses_bad_files(data: bytes, words: list[str]) -> None:
    with pytest.raises(InputError) as info:
        read_table(data, name="train")
    message = str(info.value)
    for word in words:
        assert word in message, (word, message)
    assert "\n" not in message


def test_read_table_size_limit(tmp_path: Path) -> None:
    assert MAX_UPLOAD_MB == 200
    path = tmp_path / "big.csv"
    path.write_bytes(b"a,b\n" + b"1,2\n" * 300_000)  # ~1.2 MB
    with pytest.raises(InputError, match=r"'big' is larger than the 1 MB limit"):
        read_table(path, name="big", max_mb=1)
    with pytest.raises(InputError, match="larger than"):
        read_table(io.BytesIO(path.read_bytes()), name="big", max_mb=1)
    assert len(read_table(path, name="big", max_mb=2)) == 300_000


def test_missing_path_and_wrong_type(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no file at"):
        read_table(tmp_path / "nope.csv", name="holdout")
    with pytest.raises(InputError, match="'holdout' must be a file path"):
        read_table(12, name="holdout")


def test_parquet_duplicate_columns_refused() -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    with pytest.raises(InputError, match="duplicate column names \\('a'\\)"):
        read_table(buffer.getvalue(), name="p")


# ---------------------------------------------------------------- infer_column_types
def test_infer_types_defaults_and_overrides() -> None:
    df = pd.DataFrame(
        {
            "age": [30, 41, 52, 60],
            "grade": [1, 2, 3, 1],  # few integers: still numeric
            "sex": ["F", "M", "F", "M"],
            "flag": [True, False, True, True],
            "cat": pd.Categorical(["a", "b", "a", "b"]),
            "mostly_num": ["1", "2", "3", "4"] * 1,
            "id": [10, 11, 12, 13],
        }
    )
    types = infer_column_types(df)
    assert types.numeric == ("age", "grade", "mostly_num", "id")
    assert types.categorical == ("sex", "flag", "cat")
    assert types.ignored == ()
    types = infer_column_types(df, categorical=["grade"], numeric="flag", ignore="id")
    assert types.numeric == ("age", "flag", "mostly_num")
    assert types.categorical == ("grade", "sex", "cat")
    assert types.ignored == ("id",)
    assert types.columns == ("age", "flag", "mostly_num", "grade", "sex", "cat")
    assert types.kind("grade") == "categorical"


def test_infer_types_refuses_unknown_and_conflicting_marks() -> None:
    df = pd.DataFrame({"a": [1], "b": ["x"]})
    with pytest.raises(InputError, match=r"'zz'.*not in the table"):
        infer_column_types(df, categorical=["zz"])
    with pytest.raises(InputError, match="'a' is marked both categorical and numeric"):
        infer_column_types(df, categorical=["a"], numeric=["a"])


def test_text_mostly_numbers_is_numeric_then_refused() -> None:
    df = pd.DataFrame({"age": ["30", "41", "52", "60", "33", "44", "55", "66", "77", "88", "oops"]})
    types = infer_column_types(df)
    assert types.numeric == ("age",)
    with pytest.raises(InputError) as info:
        align_tables({"train": df}, types=types)
    message = str(info.value)
    assert "'age'" in message
    assert "'train'" in message
    assert "'oops'" in message
    assert "categorical" in message


# ---------------------------------------------------------------- align_tables
def _tables() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    train = pd.DataFrame(
        {
            "age": rng.integers(18, 90, 40),
            "sex": rng.choice(["F", "M"], 40),
            "edu": rng.integers(1, 5, 40),
            "note": ["x"] * 40,
        }
    )
    synthetic = train.sample(frac=1.0, random_state=1)[["note", "edu", "sex", "age"]].reset_index(drop=True)
    synthetic["edu"] = synthetic["edu"].astype(float)  # 3.0 must equal 3
    synthetic["age"] = synthetic["age"].astype(str)  # numbers as text are fine
    return {"train": train, "synthetic": synthetic}


def test_align_by_name_and_convert() -> None:
    tables = _tables()
    types = infer_column_types(tables["train"], categorical=["edu"], ignore=["note"])
    aligned = align_tables(tables, types=types)
    assert isinstance(aligned, AlignedTables)
    assert aligned.types == ColumnTypes(numeric=("age",), categorical=("sex", "edu"), ignored=("note",))
    for frame in aligned.frames.values():
        assert list(frame.columns) == ["age", "sex", "edu"]
        assert frame["age"].dtype == np.float64
        assert frame["edu"].dtype == object
    syn = aligned["synthetic"]
    original = tables["synthetic"]
    assert syn["age"].tolist() == original["age"].astype(float).tolist()
    assert syn["edu"].tolist() == [str(int(v)) for v in original["edu"]]
    assert set(aligned["train"]["edu"]) == set(syn["edu"])
    # the inputs are not modified
    assert original["age"].dtype == object


def test_align_refuses_mismatched_columns() -> None:
    tables = _tables()
    types = infer_column_types(tables["train"])
    tables["synthetic"] = tables["synthetic"].drop(columns=["sex"]).assign(extra=1)
    with pytest.raises(InputError) as info:
        align_tables(tables, types=types)
    message = str(info.value)
    assert "'synthetic'" in message
    assert "lacks the column(s) 'sex'" in message
    assert "'extra'" in message
    assert "'train'" in message


def test_align_refuses_infinite_values_and_few_rows_and_duplicates() -> None:
    tables = _tables()
    types = infer_column_types(tables["train"])
    bad = tables["train"].copy()
    bad["age"] = bad["age"].astype(float)
    bad.loc[5, "age"] = np.inf
    with pytest.raises(InputError, match=r"'age' of table 'train' holds infinite values \(1, first at row 5\)"):
        align_tables({"train": bad, "synthetic": tables["synthetic"]}, types=types)
    with pytest.raises(InputError, match="'synthetic' has 40 row\\(s\\) but at least 100"):
        align_tables(tables, types=types, min_rows={"synthetic": 100})
    dup = tables["train"].copy()
    dup.columns = ["age", "sex", "age", "note"]
    with pytest.raises(InputError, match="duplicate column names"):
        align_tables({"train": dup}, types=ColumnTypes(numeric=("age",), categorical=("sex",), ignored=("note",)))


def test_align_drops_all_missing_column_with_warning() -> None:
    tables = _tables()
    tables["train"]["empty"] = np.nan
    tables["synthetic"]["empty"] = 1.0  # present in one table, absent in the other: still dropped
    types = infer_column_types(tables["train"], ignore=["note"])
    assert "empty" in types.numeric
    aligned = align_tables(tables, types=types)
    assert "empty" not in aligned["train"].columns
    assert "empty" in aligned.types.ignored
    assert any("'empty'" in w and "dropped" in w and "'train'" in w for w in aligned.warnings)
    # the constant column 'note' is kept, with a warning
    types = infer_column_types(tables["train"], ignore=["empty"])
    aligned = align_tables(tables, types=types)
    assert any("'note'" in w and "same value" in w for w in aligned.warnings)


def test_align_refuses_when_nothing_left() -> None:
    df = pd.DataFrame({"a": [np.nan, np.nan]})
    with pytest.raises(InputError, match="no column is left"):
        align_tables({"train": df}, types=ColumnTypes(numeric=("a",)))
    with pytest.raises(InputError, match="No column is left"):
        align_tables({"train": df}, types=ColumnTypes(ignored=("a",)))


def test_align_categorical_missing_tokens_become_nan() -> None:
    df = pd.DataFrame({"c": ["a", " b ", None, "?", 3, 3.0]})
    aligned = align_tables({"t": df}, types=ColumnTypes(categorical=("c",)))
    values = aligned["t"]["c"].tolist()
    assert values[:2] == ["a", "b"]
    assert pd.isna(values[2])
    assert pd.isna(values[3])
    assert values[4:] == ["3", "3"]


def test_columns_sentence_lists_all_up_to_200_and_suggests_the_closest() -> None:
    from audit_core.common.errors import columns_sentence

    assert columns_sentence(["age", "income"], "Income") == "its 2 columns are 'age', 'income'; did you mean 'income'?"
    assert columns_sentence(["age"], "zzz") == "its column is 'age'."
    many = [f"col{i}" for i in range(1000)]
    text = columns_sentence(many, "col999")
    assert text.count("'col") == 201  # 200 listed and the suggestion
    assert ", ... and 800 more; did you mean 'col999'?" in text
    assert len(columns_sentence([f"c{i}" for i in range(200)])) < len(text)
    assert "more" not in columns_sentence([f"c{i}" for i in range(200)])


def test_a_frame_given_as_it_is_holds_what_a_file_could():
    """The Python API's DataFrames (check_frame): bytes that are UTF-8 are text, other bytes and complex numbers are
    one sentence, and the caller's frame is never changed."""
    from audit_core.common.table_files import check_frame

    given = pd.DataFrame({"city": [b"north", "south", b"Z\xc3\xbcrich"], "age": [1, 2, 3]})
    checked = check_frame(given, name="api")
    assert checked["city"].tolist() == ["north", "south", "Zürich"]
    assert given["city"][0] == b"north"  # untouched
    with pytest.raises(InputError, match="'city' of table 'api' holds binary data that is not text"):
        check_frame(given.assign(city=[b"\x00\xff", b"a", b"b"]), name="api")
    with pytest.raises(InputError, match="'age' of table 'api' holds complex numbers"):
        check_frame(given.assign(age=np.array([1, 2, 3], dtype=complex)), name="api")
