"""Hostile inputs, generated (never committed as binaries): bad tables, odd .npz / .npy files, model files.

Each generator returns bytes (or writes a file) that the audits must refuse with one
sentence, or, for the output tests, small valid inputs. The fuzz test draws a few
hundred bad tables from :func:`bad_tables`; every family is built so that the table
is certainly unusable (not merely unusual), so "exit 2" is the only right answer.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

COLUMNS = ("age", "hours", "sex", "city")


def good_frame(n: int = 60, seed: int = 0) -> pd.DataFrame:
    """A small valid table: two numeric and two categorical columns."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "hours": rng.integers(1, 80, n),
            "sex": rng.choice(["Female", "Male"], n),
            "city": rng.choice(["north", "south", "east", "west"], n),
        }
    )


def write_good_tables(folder: Path, n: int = 60) -> dict[str, Path]:
    """train / holdout / synthetic CSVs of :func:`good_frame` (different seeds) in ``folder``."""
    paths = {}
    for i, name in enumerate(("train", "holdout", "synthetic")):
        paths[name] = folder / f"{name}.csv"
        good_frame(n, seed=i).to_csv(paths[name], index=False)
    return paths


def _csv(frame: pd.DataFrame, sep: str = ",") -> str:
    return frame.to_csv(index=False, sep=sep)


def _parquet(table) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def bad_tables(seed: int = 0, per_family: int = 14) -> Iterator[tuple[str, bytes]]:
    """Yield ``(family, content)`` for certainly-unusable tables: ``per_family`` random variants of each family."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    for k in range(per_family):
        frame = good_frame(int(rng.integers(30, 80)), seed=int(rng.integers(1 << 30)))
        text = _csv(frame)
        lines = text.splitlines()
        row = int(rng.integers(1, len(lines)))
        col = int(rng.integers(0, 2))  # a numeric column
        cells = [line.split(",") for line in lines]

        def joined(rows: list[list[str]], sep: str = ",") -> bytes:
            return ("\n".join(sep.join(r) for r in rows) + "\n").encode()

        yield "empty", "".join(rng.choice([" ", "\n", "\r\n", "\t"], size=int(rng.integers(0, 6)))).encode()
        yield "header only", (lines[0] + "\n" * int(rng.integers(0, 3))).encode()
        junk = rng.integers(0, 256, size=int(rng.integers(20, 400)), dtype=np.uint8).tobytes()
        yield "binary with NUL", junk[:5] + b"\x00" + junk
        latin = [list(r) for r in cells]
        latin[row][2] = "Z\xfcrich"
        yield "not UTF-8", joined(latin).decode().encode("latin-1")
        yield "UTF-16", text.encode("utf-16")
        dup = [list(r) for r in cells]
        dup[0][int(rng.integers(1, 4))] = dup[0][0]
        yield "duplicate column names", joined(dup)
        blank = [list(r) for r in cells]
        blank[0][int(rng.integers(0, 3))] = ""
        yield "blank column name", joined(blank)
        longer = [list(r) for r in cells]
        longer[row] = longer[row] + ["extra"] * int(rng.integers(1, 3))
        yield "too many fields", joined(longer)
        mixed = [list(r) for r in cells]
        sep = str(rng.choice([";", "\t", "|"]))
        for r in rng.choice(np.arange(1, len(cells)), size=int(rng.integers(1, len(cells) // 2)), replace=False):
            mixed[int(r)] = [sep.join(mixed[int(r)])]
        yield "mixed delimiters", joined(mixed)
        text_cell = [list(r) for r in cells]
        text_cell[row][col] = str(rng.choice(["old", "n.a", "1O", "twelve", "30-40"]))
        yield "text in a numeric column", joined(text_cell)
        inf = [list(r) for r in cells]
        inf[row][col] = str(rng.choice(["inf", "-inf", "Infinity"]))
        yield "infinite value", joined(inf)
        renamed = [list(r) for r in cells]
        renamed[0][int(rng.integers(0, 4))] = f"col{int(rng.integers(1000))}"
        yield "column missing", joined(renamed)
        extra = [[*r, str(i)] for i, r in enumerate(cells)]
        extra[0][-1] = "extra_column"
        yield "extra column", joined(extra)
        yield "too few rows", joined(cells[: int(rng.integers(2, 20))])
        missing = [cells[0]] + [["?"] * 4 for _ in cells[1:]]
        yield "all missing", joined(missing)
        magic = [b"PK\x03\x04", b"\x1f\x8b\x08", b"\x80\x04\x95", b"PAR1"][k % 4]
        yield "foreign magic bytes", magic + rng.integers(0, 256, size=int(rng.integers(10, 300)), dtype=np.uint8).tobytes()
        yield "pickle", pickle.dumps(frame.to_dict(), protocol=int(rng.integers(2, 6)))
        raw = [bytes(rng.integers(128, 256, size=int(rng.integers(1, 8)), dtype=np.uint8)) for _ in range(len(frame))]
        yield "Parquet binary column", _parquet(pa.table({**{c: frame[c] for c in COLUMNS[:3]}, "city": pa.array(raw)}))
        nested = pa.array([[int(v)] for v in frame["age"]])
        yield "Parquet list column", _parquet(pa.table({"age": nested, **{c: frame[c] for c in COLUMNS[1:]}}))
        yield "cell over the CSV field limit", long_cell_csv(frame, closed=bool(k % 2), row=row)


def long_cell_csv(frame: pd.DataFrame, *, closed: bool = True, row: int = 1, length: int = 140_000) -> bytes:
    """``frame`` as CSV with one quoted cell of ``length`` characters on data row ``row`` (over the csv module's
    131,072-character field limit), or, with ``closed=False``, a quote never closed followed by ``length`` characters."""
    lines = _csv(frame).splitlines()
    cells = lines[row].split(",")
    cells[2] = '"' + "x" * length + ('"' if closed else "")
    lines[row] = ",".join(cells)
    if not closed:  # the rest of the file is inside the quote
        lines.insert(row + 1, "y" * length)
    return ("\n".join(lines) + "\n").encode()


def parquet_with_index(frame: pd.DataFrame, index: str | list[str] | None) -> bytes:
    """``frame`` written by pandas with a non-default index: named (one or several levels) or unnamed (None)."""
    buf = io.BytesIO()
    indexed = frame.set_index(pd.Index(np.arange(len(frame)) * 7)) if index is None else frame.set_index(index)
    indexed.to_parquet(buf)
    return buf.getvalue()


# ----------------------------------------------------------------------------- images and models
def npz_bytes(**arrays: np.ndarray) -> bytes:
    """An .npz archive of ``arrays`` (compressed)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    return buf.getvalue()


def image_arrays(n: int = 60, side: int = 8, seed: int = 0, n_classes: int = 3) -> dict[str, np.ndarray]:
    """Valid images / labels / is_member arrays (random pixels, half members)."""
    rng = np.random.default_rng(seed)
    return {
        "images": rng.random((n, side, side), dtype=np.float32),
        "labels": rng.integers(0, n_classes, n),
        "is_member": (np.arange(n) % 2).astype(np.int64),
    }


def npy_bytes(array: np.ndarray) -> bytes:
    """One array as .npy bytes (what a renamed ``.npy`` file holds)."""
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def npy_claiming(shape: tuple[int, ...], dtype: str = "<f4", payload: bytes = b"\x00" * 64) -> bytes:
    """A .npy whose header claims ``shape`` while the file holds only ``payload``."""
    header = repr({"descr": dtype, "fortran_order": False, "shape": tuple(shape)}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload


def npy_with_header(header: bytes) -> bytes:
    """A .npy whose header text is ``header`` verbatim (e.g. a dict literal cut short), then some bytes."""
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + b"\x00" * 64


def npz_with_members(members: dict[str, bytes]) -> bytes:
    """An .npz (zip) whose members are the given raw .npy bytes, deflated."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def zip_bomb_npz(gigabytes: float = 2.0) -> bytes:
    """A small .npz (about 1 MB per GB) whose ``images`` member inflates to ``gigabytes`` GB, built without compressing them.

    After a full flush deflate restarts without history, so each 16 MiB block of zeros
    compresses to the same bytes: the stream is one block's output repeated. The CRC
    is not computed (a reader must refuse the sizes long before it could check it).
    """
    block = b"\x00" * (1 << 24)
    n_blocks = max(2, int(gigabytes * 1e9) // len(block))
    side = 64
    n_images = n_blocks * len(block) // (4 * side * side)
    header = npy_claiming((n_images, side, side), payload=b"")
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = comp.compress(header) + comp.flush(zlib.Z_FULL_FLUSH)
    repeat = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    stream = first + repeat * n_blocks + comp.flush()
    members = [("images.npy", stream, len(header) + n_blocks * len(block), 8)]
    for name, arr in (("labels.npy", np.zeros(n_images, dtype=np.int8)[:40]), ("is_member.npy", np.zeros(40, np.int8))):
        raw = npy_bytes(arr)
        members.append((name, raw, len(raw), 0))
    out, central = io.BytesIO(), io.BytesIO()
    for name, data, size, method in members:
        offset = out.tell()
        crc = zlib.crc32(data) if method == 0 else 0
        # Past 4 GiB (the 6 MB file inflating to 6.5 GB) the sizes go in a zip64 extra field.
        extra = struct.pack("<HHQQ", 0x0001, 16, size, len(data)) if size > 0xFFFFFFFF else b""
        sizes = (0xFFFFFFFF, 0xFFFFFFFF) if extra else (len(data), size)
        version = 45 if extra else 20
        fields = (version, 0, method, 0, 0x21, crc, *sizes, len(name), len(extra))
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + name.encode() + extra + data)
        central.write(struct.pack("<IH", 0x02014B50, version) + struct.pack("<HHHHHIIIHH", *fields))
        central.write(struct.pack("<HHHII", 0, 0, 0, 0, offset) + name.encode() + extra)
    cd_offset = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central.getvalue()), cd_offset, 0))
    return out.getvalue()


def safetensors_bytes(tensors: dict[str, np.ndarray], pad_header_to: int | None = None) -> bytes:
    """A safetensors file built by hand; ``pad_header_to`` pads the JSON header to that many bytes."""
    meta, offset, blobs = {}, 0, []
    for key, arr in tensors.items():
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        meta[key] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        blobs.append(arr.tobytes())
    header = json.dumps(meta).encode()
    if pad_header_to is not None:
        header += b" " * (pad_header_to - len(header))
    return struct.pack("<Q", len(header)) + header + b"".join(blobs)
