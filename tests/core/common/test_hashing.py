"""Content hashes (audit_core.common.hashing): the result store's keys and the reports' input digests."""

import numpy as np
import pandas as pd

from audit_core.common.hashing import fingerprint, table_digest
from audit_core.common.report import describe_input


def _table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.normal(size=50), "b": rng.choice(["x", "y"], 50)})


def test_same_content_same_key_any_change_another():
    base = fingerprint("audit", _table(), {"prior": 0.5, "cols": ("a", "b")}, b"raw", 7)
    assert base == fingerprint("audit", _table(), {"cols": ("a", "b"), "prior": 0.5}, b"raw", 7)  # dict order ignored
    changed = _table()
    changed.iloc[3, 0] += 1e-12
    others = [
        fingerprint("audit", changed, {"prior": 0.5, "cols": ("a", "b")}, b"raw", 7),
        fingerprint("audit", _table(), {"prior": 0.4, "cols": ("a", "b")}, b"raw", 7),
        fingerprint("audit", _table(), {"prior": 0.5, "cols": ("b", "a")}, b"raw", 7),
        fingerprint("audit", _table(), {"prior": 0.5, "cols": ("a", "b")}, b"raw!", 7),
        fingerprint("audit", _table().rename(columns={"b": "c"}), {"prior": 0.5, "cols": ("a", "b")}, b"raw", 7),
        fingerprint("audit", _table(), {"prior": 0.5, "cols": ("a", "b")}, b"raw", 8),
    ]
    assert len({base, *others}) == 7


def test_an_uploaded_table_keys_apart_from_the_same_table_of_another_session():
    mine, theirs = _table(), _table()
    mine.attrs["uploaded_by_session"], theirs.attrs["uploaded_by_session"] = "s1", "s2"
    assert fingerprint(mine) != fingerprint(theirs)
    assert table_digest(mine) == table_digest(theirs)  # the report's digest is about the data alone


def test_the_report_digest_is_the_table_digest():
    df = _table(3)
    assert describe_input("train", df).sha256 == table_digest(df)
