"""Hostile inputs, generated (never committed as binaries): bad tables, odd .npz / .npy files, model files.

Each generator returns bytes (or writes a file) that the audits must refuse with one
sentence, or, for the output tests, small valid inputs. The fuzz test draws a few
hundred bad tables from :func:`bad_tables`; every family is built so that the table
is certainly unusable (not merely unusual), so "exit 2" is the only right answer.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import sys
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
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


# ----------------------------------------------------------------------------- model files: ONNX, skops, safetensors
MARKER_NAME = "PWNED"
"""The file a payload creates when it runs: a hostile file that gets it written has executed code."""


class _Payload:
    """Pickled, this writes :data:`MARKER_NAME` next to ``folder`` when (and only when) something unpickles it."""

    def __init__(self, folder: Path) -> None:
        self.path = str(Path(folder) / MARKER_NAME)

    def __reduce__(self):
        return (open, (self.path, "w"))


def payload_pickle(folder: Path) -> bytes:
    """A pickle that creates the marker file when loaded (protocol 4)."""
    return pickle.dumps(_Payload(folder), protocol=4)


def torch_zip_payload(folder: Path) -> bytes:
    """What ``torch.save`` writes (a zip with ``archive/data.pkl``), its pickle the marker payload."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", payload_pickle(folder))
        z.writestr("archive/version", "3\n")
    return buf.getvalue()


def onnx_model(nodes, initializers=(), *, n_features: int = 3, outputs=None, inputs=None, functions=(), opsets=None) -> bytes:
    """A small ONNX model from nodes (``X`` [N, n_features] float in, ``logits`` [N, 2] float out unless given)."""
    from onnx import TensorProto, helper

    inputs = inputs or [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, n_features])]
    outputs = outputs if outputs is not None else [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 2])]
    graph = helper.make_graph(list(nodes), "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=opsets or [helper.make_opsetid("", 17)], ir_version=8,
                              functions=list(functions))  # fmt: skip
    return model.SerializeToString()


def matmul_onnx(weights: np.ndarray, *, output_shape=None) -> bytes:
    """``logits = X @ W`` (the output's declared shape ``[N, W.shape[1]]`` unless given)."""
    from onnx import TensorProto, helper, numpy_helper

    W = numpy_helper.from_array(np.asarray(weights, dtype=np.float32), name="W")
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, output_shape or [None, int(W.dims[-1])])
    node = helper.make_node("MatMul", ["X", "W"], ["logits"])
    return onnx_model([node], [W], n_features=int(W.dims[0]), outputs=[out])


def hostile_onnx(folder: Path) -> dict[str, bytes]:
    """ONNX-shaped attacks on the model audit (each must be one sentence, exit 2): see the keys."""
    from onnx import FunctionProto, TensorProto, helper, numpy_helper

    from tests.model_files import custom_domain_onnx, external_data_onnx

    logits = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 2])
    good = matmul_onnx(np.ones((3, 2)))
    huge = TensorProto()
    huge.name, huge.data_type = "W", TensorProto.FLOAT
    huge.dims.extend([100_000, 100_000])
    huge.raw_data = b"\x00" * 16
    sub = helper.make_graph([helper.make_node("EvilOp", ["X"], ["y"], domain="com.evil")], "then", [],
                            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])  # fmt: skip
    cond = numpy_helper.from_array(np.array(True), "C")
    nested = [helper.make_node("If", ["C"], ["logits"], then_branch=sub, else_branch=sub)]
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Identity", ["v_in"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, None)],
    )  # fmt: skip
    loop = [helper.make_node("Loop", ["M", "C", "X"], ["v"], body=body),
            helper.make_node("Slice", ["v", "s0", "s1", "ax"], ["logits"])]
    slices = [numpy_helper.from_array(np.array(v, dtype=np.int64), n) for n, v in (("s0", [0]), ("s1", [2]), ("ax", [1]))]
    bomb = [helper.make_node("ConstantOfShape", ["S"], ["big"]), helper.make_node("ReduceSum", ["big"], ["s"], keepdims=0),
            helper.make_node("MatMul", ["X", "W"], ["xw"]), helper.make_node("Add", ["xw", "s"], ["logits"])]  # fmt: skip
    function = FunctionProto()
    function.name, function.domain = "Evil", "local.functions"
    leaf = helper.make_graph([helper.make_node("Identity", ["X"], ["logits"])], "leaf", [], [logits])
    deep = leaf
    for _ in range(30):  # near protobuf's nesting limit (the else branch stays a leaf: no doubling)
        deep = helper.make_graph([helper.make_node("If", ["C"], ["logits"], then_branch=deep, else_branch=leaf)], "deep",
                                 [], [logits])  # fmt: skip
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("readme.txt", "not a model")
    return {
        "custom domain": custom_domain_onnx(),
        "custom domain in a subgraph": onnx_model(nested, [cond]),
        "model-local function": onnx_model([helper.make_node("MatMul", ["X", "W"], ["logits"])],
                                           [numpy_helper.from_array(np.ones((3, 2), np.float32), "W")],
                                           functions=[function]),
        "external data outside": external_data_onnx(),
        "huge declared initializer": onnx_model([helper.make_node("MatMul", ["X", "W"], ["logits"])], [huge]),
        "truncated protobuf": good[: len(good) // 2],
        "zip archive": archive.getvalue(),
        "pickle renamed": payload_pickle(folder),
        "torch.save renamed": torch_zip_payload(folder),
        "NaN outputs": matmul_onnx(np.full((3, 2), np.nan)),
        "regressor": matmul_onnx(np.ones((3, 1))),
        "1-D output": onnx_model([helper.make_node("MatMul", ["X", "w"], ["logits"])],
                                 [numpy_helper.from_array(np.ones(3, np.float32), "w")],
                                 outputs=[helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None])]),
        "three classes": matmul_onnx(np.ones((3, 3))),
        "20,000 classes": matmul_onnx(np.ones((3, 20_000))),
        "30,000 operators": onnx_model([helper.make_node("Relu", ["X" if i == 0 else f"t{i}"], [f"t{i + 1}"])
                                        for i in range(30_000)] + [helper.make_node("MatMul", ["t30000", "W"], ["logits"])],
                                       [numpy_helper.from_array(np.ones((3, 2), np.float32), "W")]),
        "schema mismatch": matmul_onnx(np.ones((5, 2))),
        "infinite loop": onnx_model(loop, [numpy_helper.from_array(np.array(2**62, dtype=np.int64), "M"), cond, *slices]),
        "memory bomb": onnx_model(bomb, [numpy_helper.from_array(np.array([10**6, 10**6], dtype=np.int64), "S"),
                                         numpy_helper.from_array(np.ones((3, 2), np.float32), "W")]),
        "bool input": onnx_model([helper.make_node("Cast", ["X"], ["xf"], to=TensorProto.FLOAT),
                                  helper.make_node("MatMul", ["xf", "W"], ["logits"])],
                                 [numpy_helper.from_array(np.ones((3, 2), np.float32), "W")],
                                 inputs=[helper.make_tensor_value_info("X", TensorProto.BOOL, [None, 3])]),
        "nested 30 deep": onnx_model([helper.make_node("If", ["C"], ["logits"], then_branch=deep, else_branch=leaf)],
                                      [cond]),
        "random bytes": np.random.default_rng(7).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
    }


def _rebuilt_zip(data: bytes, change) -> bytes:
    """A zip archive's members rewritten by ``change(name, bytes) -> [(name, bytes), ...]``."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            for name, content in change(info.filename, src.read(info)):
                dst.writestr(name, content)
    return out.getvalue()


def zip_bomb_member(name: str, gigabytes: float, others: dict[str, bytes] | None = None) -> bytes:
    """A zip whose member ``name`` inflates to ``gigabytes`` GB of spaces (built without compressing them, as
    :func:`zip_bomb_npz` builds its bomb), beside ``others`` stored as they are."""
    block = b" " * (1 << 24)
    n_blocks = max(2, int(gigabytes * 1e9) // len(block))
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = comp.compress(b"{") + comp.flush(zlib.Z_FULL_FLUSH)
    repeat = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    stream = first + repeat * n_blocks + comp.compress(b"}") + comp.flush()
    members = [(name, stream, 2 + n_blocks * len(block), 8)]
    members += [(k, v, len(v), 0) for k, v in (others or {}).items()]
    out, central = io.BytesIO(), io.BytesIO()
    for member, data, size, method in members:
        offset = out.tell()
        crc = zlib.crc32(data) if method == 0 else 0
        extra = struct.pack("<HHQQ", 0x0001, 16, size, len(data)) if size > 0xFFFFFFFF else b""
        sizes = (0xFFFFFFFF, 0xFFFFFFFF) if extra else (len(data), size)
        version = 45 if extra else 20
        fields = (version, 0, method, 0, 0x21, crc, *sizes, len(member), len(extra))
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, *fields) + member.encode() + extra + data)
        central.write(struct.pack("<IH", 0x02014B50, version) + struct.pack("<HHHHHIIIHH", *fields))
        central.write(struct.pack("<HHHII", 0, 0, 0, 0, offset) + member.encode() + extra)
    cd_offset = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central.getvalue()), cd_offset, 0))
    return out.getvalue()


def hostile_skops(folder: Path, n_features: int = 3) -> dict[str, bytes]:
    """skops-shaped attacks: an untrusted type (``os.system`` named in the schema), a zip bomb, ``../`` and absolute
    member names, a regressor, and a forest (whose ``Tree`` type skops does not trust by default)."""
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LinearRegression, LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, n_features))
    y = (X[:, 0] > 0).astype(int)
    good = sio.dumps(LogisticRegression().fit(X, y))

    def evil_schema(name: str, content: bytes):
        if name == "schema.json":
            schema = json.loads(content)
            schema["__module__"], schema["__class__"] = "os", "system"
            content = json.dumps(schema).encode()
        return [(name, content)]

    members = {}
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        members = {n: z.read(n) for n in z.namelist() if n != "schema.json"}
    return {
        "untrusted type": _rebuilt_zip(good, evil_schema),
        "zip bomb": zip_bomb_member("schema.json", 3.0, members),
        "../ member name": _rebuilt_zip(good, lambda n, c: [(n, c), *([(f"../../{n}", c)] if n.endswith(".npy") else [])]),
        "absolute member name": _rebuilt_zip(good, lambda n, c: [(n, c), *([("/abs.json", c)] if n == "schema.json" else [])]),
        "regressor": sio.dumps(LinearRegression().fit(X, y)),
        "forest (vetted types, loads with no flag)": sio.dumps(RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y)),
        "pickle inside": _rebuilt_zip(good, lambda n, c: [(n, payload_pickle(folder) if n.endswith(".npy") else c)]),
        "50,000 members": _rebuilt_zip(good, lambda n, c: [(n, c), *([(f"m{i}", b"") for i in range(50_000)]
                                                                    if n == "schema.json" else [])]),
    }


def raw_safetensors(header: bytes, data: bytes = b"", *, length: int | None = None) -> bytes:
    """A safetensors file from its header text as given (and a declared header length, when not its own)."""
    return struct.pack("<Q", len(header) if length is None else length) + header + data


def hostile_safetensors() -> dict[str, bytes]:
    """safetensors-shaped attacks on the image path (model audit and fabrication)."""
    from audit_core.fabrication.architectures import SmallCNN

    state = {k: v.numpy() for k, v in SmallCNN(1, 3).state_dict().items()}
    nan = {k: (np.full_like(v, np.nan) if k == "conv1.weight" else v) for k, v in state.items()}
    return {
        "huge shapes": raw_safetensors(b'{"conv1.weight":{"dtype":"F32","shape":[1000000,1000000,3,3],"data_offsets":[0,16]}}',
                                       b"\x00" * 16),
        "offsets past the end": raw_safetensors(b'{"conv1.weight":{"dtype":"F32","shape":[4],"data_offsets":[0,1000000000]}}',
                                                b"\x00" * 16),
        "absurd header length": raw_safetensors(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', b"\x00" * 4,
                                                length=2**62),
        "non-UTF-8 header": raw_safetensors(b'{"conv1.weight\xff\xfe":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
                                            b"\x00" * 4),
        "header not JSON": raw_safetensors(b"{this is not json at all}", b"\x00" * 4),
        "deep JSON header": raw_safetensors(b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}"),
        "NaN weights": safetensors_bytes(nan),
        "no tensors": raw_safetensors(b"{}"),
    }


def hostile_npz(folder: Path) -> dict[str, bytes]:
    """.npz-shaped attacks on the model audit's image members: object arrays (a pickle that would run), a zip bomb,
    a single .npy renamed."""
    arrays = image_arrays()
    objects = npz_with_members({"images.npy": npy_bytes(arrays["images"]),
                                "labels.npy": b"\x93NUMPY\x01\x00" + _object_header() + payload_pickle(folder)})  # fmt: skip
    many = npz_with_members({"images.npy": npy_bytes(arrays["images"]), "labels.npy": npy_bytes(arrays["labels"]),
                             **{f"m{i}.npy": b"" for i in range(20_000)}})  # fmt: skip
    return {"object arrays": objects, "zip bomb": zip_bomb_npz(2.0), "npy renamed": npy_bytes(arrays["images"]),
            "20,000 members": many}


def _object_header() -> bytes:
    header = repr({"descr": "|O", "fortran_order": False, "shape": (60,)}).encode()
    header += b" " * (63 - (len(header) + 10) % 64) + b"\n"
    return struct.pack("<H", len(header)) + header


# ----------------------------------------------------------------------------- canary files, PNG folders, TorchScript
def canary_table(n: int = 200, seed: int = 0, n_features: int = 3) -> pd.DataFrame:
    """A valid canary file for a numeric model of ``n_features`` inputs: x0..x2, label ``y`` (0/1), ``included`` (0/1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(n_features)])
    return frame.assign(y=(X[:, 0] > 0).astype(int), included=rng.integers(0, 2, n))


def hostile_canaries(*, full: bool = False) -> dict[str, pd.DataFrame]:
    """Canary files the DP claim check of an uploaded model must refuse (``full`` adds the 50,001- and 10^6-row files)."""
    good = canary_table()
    dup = good.copy()
    dup.iloc[1] = dup.iloc[0]
    out = {
        "missing label column": good.drop(columns="y"),
        "missing inclusion column": good.drop(columns="included"),
        "inclusion 0/1/2": good.assign(included=np.arange(len(good)) % 3),
        "inclusion text": good.assign(included=np.where(np.arange(len(good)) % 2, "maybe", "perhaps")),
        "all included": good.assign(included=1),
        "none included": good.assign(included=0),
        "duplicated canaries": dup,
        "label not a class": good.assign(y=7),
        "infinite feature": good.assign(x1=np.where(np.arange(len(good)) == 5, np.inf, good["x1"])),
    }
    if full:
        out["50,001 rows"] = canary_table(50_001, seed=1)
        out["1,000,000 rows"] = canary_table(1_000_000, seed=2)
    return out


def png_folder(folder: Path, n: int = 40, side: int = 8, seed: int = 0) -> Path:
    """A valid PNG folder: ``n`` grey ``side`` x ``side`` images and ``labels.csv`` (3 classes, half members)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = ["file,label,is_member"]
    for i in range(n):
        Image.fromarray((rng.random((side, side)) * 255).astype(np.uint8)).save(folder / f"i{i}.png")
        rows.append(f"i{i}.png,{i % 3},{i % 2}")
    (folder / "labels.csv").write_text("\n".join(rows) + "\n")
    return folder


def _png_bomb(side: int = 30_000) -> bytes:
    """A grey PNG declaring ``side`` x ``side`` pixels (900 megapixels at 30,000), its IDAT a few hundred KB."""
    comp = zlib.compressobj(9)
    head = comp.compress(b"") + comp.flush(zlib.Z_FULL_FLUSH)
    row = comp.compress(b"\x00" * (side + 1)) + comp.flush(zlib.Z_FULL_FLUSH)  # no history after a full flush:
    idat = head + row * side + comp.flush()  # every row compresses to the same bytes (the Adler-32 is left wrong)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + header + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def hostile_png_folders(root: Path) -> dict[str, Path]:
    """The fabrication audit's image folders that must be refused in one sentence (issue 33's seven, and more)."""
    out = {}

    def variant(name: str) -> Path:
        out[name] = png_folder(root / name.replace(" ", "_").replace("/", "_").replace(",", ""))
        return out[name]

    d = variant("corrupt PNG")
    (d / "i3.png").write_bytes((d / "i3.png").read_bytes()[:30])
    variant("text named .png").joinpath("i3.png").write_text("hello, I am text")
    d = variant("bad IDAT")
    raw = bytearray((d / "i3.png").read_bytes())
    at = raw.find(b"IDAT")
    raw[at + 8 : at + 20] = b"\xff" * 12
    (d / "i3.png").write_bytes(bytes(raw))
    variant("900-megapixel bomb").joinpath("i3.png").write_bytes(_png_bomb())
    d = variant("folder named like an image")
    (d / "i3.png").unlink()
    (d / "i3.png").mkdir()
    d = variant("short labels.csv row")
    lines = (d / "labels.csv").read_text().splitlines()
    lines[4] = "i3.png,1"
    (d / "labels.csv").write_text("\n".join(lines) + "\n")
    d = variant("Latin-1 labels.csv")
    (d / "labels.csv").write_bytes(((d / "labels.csv").read_text() + "\xe9t\xe9.png,1,0\n").encode("latin-1"))
    d = variant("link out of the folder")
    (d / "i3.png").unlink()
    (d / "i3.png").symlink_to("/etc/passwd")
    d = variant("FIFO named like an image")
    (d / "i3.png").unlink()
    os.mkfifo(d / "i3.png")
    d = variant("labels.csv a FIFO")
    (d / "labels.csv").unlink()
    os.mkfifo(d / "labels.csv")
    d = variant("../ in labels.csv")
    (d / "labels.csv").write_text((d / "labels.csv").read_text().replace("i3.png", "../../../etc/passwd"))
    d = variant("GIF named .png")
    from PIL import Image

    Image.fromarray(np.zeros((8, 8), np.uint8)).save(d / "i3.png", format="GIF")
    return out


def torchscript_models(root: Path) -> dict[str, Path]:
    """Trusted TorchScript files (``torch.jit.script``) for the fabrication audit, by behaviour: ``valid`` and
    ``frozen`` (no parameters) must run; the others must be one sentence."""
    import torch
    from torch import nn

    from audit_core.fabrication.architectures import SmallCNN

    class Linear(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(64, 3)

    class Raises(Linear):
        def forward(self, x):
            if x.shape[0] > 0:
                raise RuntimeError("boom from the model's own code")
            return self.fc(x.flatten(1))

    class Pair(Linear):
        def forward(self, x):
            y = self.fc(x.flatten(1))
            return (y, y)

    class Mapping(Linear):
        def forward(self, x) -> dict[str, torch.Tensor]:
            return {"logits": self.fc(x.flatten(1))}

    class Flat(Linear):
        def forward(self, x):
            return self.fc(x.flatten(1)).sum(1)

    class NaN(Linear):
        def forward(self, x):
            return self.fc(x.flatten(1)) * float("nan")

    class Whole(Linear):
        def forward(self, x):
            return (self.fc(x.flatten(1)) * 100).long()

    class Parameterless(nn.Module):
        def forward(self, x):
            return x.flatten(1)[:, :3] * 10

    root.mkdir(parents=True, exist_ok=True)
    modules = {"valid": SmallCNN(1, 3), "raises": Raises(), "tuple": Pair(), "dict": Mapping(), "1-D": Flat(),
               "NaN": NaN(), "integer": Whole(), "no parameters": Parameterless()}  # fmt: skip
    out = {}
    for name, module in modules.items():
        out[name] = root / f"{name.replace(' ', '_')}.pt"
        torch.jit.save(torch.jit.script(module.eval()), str(out[name]))
    out["frozen"] = root / "frozen.pt"
    torch.jit.save(torch.jit.freeze(torch.jit.script(SmallCNN(1, 3).eval())), str(out["frozen"]))
    return out


# ----------------------------------------------------------------------------- the attacker probe
# ``python -m tests.hostile_inputs`` runs every case below as a real ``python -m audit_core`` process (``--fast``: the
# subset CI runs, in this process; ``--only TEXT``: the cases whose name holds TEXT) and prints the count of each
# kind of failure. A case is a command line, without --quiet (progress lines before a refusal make it more than one
# line), with outputs asked for in a fresh folder (--json, --html, --records, --scores-out as the subcommand has them).
REFUSE, ANY = "refuse", "any"
KINDS = ("traceback", "hang", "multi-line refusal", "partial output", "code execution", "accepted", "not refused cleanly")
"""What can go wrong with a case: a traceback on stderr; no exit within the time limit; exit 2 with other than one
``error:`` line on stderr; an output left behind by a failed run (or missing after a successful one); the payload's
marker file written; exit 0 where a refusal was due; any other exit status than 0, 2 or 3."""


@dataclass(frozen=True)
class Case:
    """One command line of the probe.

    ``argv`` is the subcommand and its inputs (outputs are added); ``expect`` is :data:`REFUSE` (exit 2 with one
    line) or :data:`ANY` (exit 0, 2 or 3: a valid run, or a refusal, never a crash); ``fast``: in the CI form;
    ``env``: environment changes (None removes a variable); ``stdout``: a path standard output goes to;
    ``outputs``: False leaves the output flags out (the case sets its own).
    """

    name: str
    argv: tuple[str, ...]
    expect: str = REFUSE
    fast: bool = True
    env: tuple[tuple[str, str | None], ...] = ()
    stdout: str | None = None
    outputs: bool = True
    timeout_s: float = 300.0


@dataclass(frozen=True)
class Verdict:
    case: Case
    status: int | None
    stderr: str
    seconds: float
    problems: tuple[str, ...]

    def line(self) -> str:
        err = self.stderr.strip().replace("\n", " | ")
        return f"{self.case.name}: exit {self.status}, {self.seconds:.1f} s, {', '.join(self.problems) or 'clean'}: {err[:300]}"


_OUTPUT_FLAGS = {"json": ".json", "html": ".html", "records": ".csv", "scores-out": ".parquet"}


def _output_argv(command: str, folder: Path) -> dict[str, Path]:
    from audit_core.registry import REGISTRY, TOOLS

    audit = {**REGISTRY, **TOOLS}[command]
    return {flag: folder / f"out{suffix}" for flag, suffix in _OUTPUT_FLAGS.items() if flag in audit.outputs}


def _judge(case: Case, status: int | None, stderr: str, outputs: dict[str, Path], marker: Path, seconds: float,
           crash: str = "") -> Verdict:  # fmt: skip
    problems = []
    lines = [line for line in stderr.splitlines() if line.strip()]
    if status is None:
        problems.append("hang")
    if "Traceback (most recent call last)" in stderr or crash:
        problems.append("traceback")
    if status == 2 and (len(lines) != 1 or not lines[0].startswith("error:")):
        problems.append("multi-line refusal")
    if status is not None and status not in (0, 2, 3) and not crash:
        problems.append("not refused cleanly")
    left = [p.name for p in outputs.values() if p.exists() or p.with_name(f".{p.name}").exists()]
    if status not in (0, 3) and left:
        problems.append("partial output")
    if status in (0, 3) and len(left) != len(outputs) and case.stdout is None:
        problems.append("partial output")
    if marker.exists():
        problems.append("code execution")
        marker.unlink()
    if case.expect == REFUSE and status in (0, 3):
        problems.append("accepted")
    return Verdict(case, status, stderr + crash, seconds, tuple(problems))


class _Hang(BaseException):
    """Raised by the alarm of an in-process case that ran past its time limit."""


def _in_process(argv: list[str], *, timeout_s: float, env: dict[str, str | None], stdout: str | None):
    """``main(argv)`` in this process with fds 1 and 2 (and sys.stdout / sys.stderr) captured: (status or None when
    it hung, stderr text, crash text when an exception escaped)."""
    import contextlib
    import signal
    import sys
    import tempfile
    import traceback

    from audit_core.__main__ import main

    saved = {fd: os.dup(fd) for fd in (1, 2)}
    old_env = {k: os.environ.get(k) for k in env}
    old_streams = sys.stdout, sys.stderr
    status: int | None = None
    crash = ""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        for stream in old_streams:
            stream.flush()
        target = os.open(stdout, os.O_WRONLY) if stdout else os.dup(out.fileno())
        os.dup2(target, 1)
        os.close(target)
        os.dup2(err.fileno(), 2)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        for key, value in env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

        def alarm(signum, frame):
            raise _Hang

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
        try:
            status = main(argv)
        except SystemExit as exc:  # argparse
            status = exc.code if isinstance(exc.code, int) else 2
        except _Hang:
            status = None
        except BaseException:
            crash = traceback.format_exc()
            status = 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError):
                    stream.flush()
            sys.stdout, sys.stderr = old_streams
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            for key, value in old_env.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        err.seek(0)
        return status, err.read().decode("utf-8", "replace"), crash


def _subprocess(argv: list[str], *, timeout_s: float, env: dict[str, str | None], stdout: str | None):
    import subprocess
    import sys

    full_env = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    root = Path(__file__).resolve().parents[1]
    with open(stdout or os.devnull, "wb") as sink:
        try:
            proc = subprocess.run([sys.executable, "-m", "audit_core", *argv], cwd=root, env=full_env, stdout=sink,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=timeout_s, check=False)  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            return None, (exc.stderr or b"").decode("utf-8", "replace"), ""
    return proc.returncode, proc.stderr.decode("utf-8", "replace"), ""


def run_case(case: Case, folder: Path, *, in_process: bool) -> Verdict:
    """Run one case with its outputs in a fresh folder under ``folder``; judge what happened."""
    import time

    where = folder / "outputs" / "".join(c if c.isalnum() else "_" for c in case.name)
    where.mkdir(parents=True, exist_ok=True)
    outputs = _output_argv(case.argv[0], where) if case.outputs else {}
    argv = [*case.argv, *(x for flag, path in outputs.items() for x in (f"--{flag}", str(path)))]
    runner = _in_process if in_process else _subprocess
    start = time.perf_counter()
    status, stderr, crash = runner(argv, timeout_s=case.timeout_s, env=dict(case.env), stdout=case.stdout)
    return _judge(case, status, stderr, outputs, folder / MARKER_NAME, time.perf_counter() - start, crash)


def parquet_dictionary_bomb(rows: int = 2000, cell: int = 1_000_000) -> bytes:
    """A Parquet file of a few KB whose text column repeats two ``cell``-character strings ``rows`` times (2 GB
    decoded at the defaults), beside a numeric column."""
    import pyarrow as pa

    words = pa.array(["x" * cell, "y" * cell])
    column = pa.DictionaryArray.from_arrays(pa.array(np.arange(rows) % 2, type=pa.int32()), words)
    return _parquet(pa.table({"city": column, "age": pa.array(np.arange(rows))}))


def parquet_cell_bomb(rows: int = 60_000_000) -> bytes:
    """A Parquet file of under a MB declaring ``rows`` rows of two int8 columns of zeros (run-length encoded)."""
    import pyarrow as pa

    zeros = pa.array(np.zeros(rows, dtype=np.int8))
    return _parquet(pa.table({"age": zeros, "hours": zeros}))


def _write(folder: Path, name: str, data: bytes) -> str:
    path = folder / name
    path.write_bytes(data)
    return str(path)


def _silent_server() -> str:
    """A local TCP server that accepts connections and never says a word (as a web server waits for a request):
    its ``tcp://`` address."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def serve() -> None:
        while True:
            conn, _ = server.accept()
            held.append(conn)  # kept open, never answered

    threading.Thread(target=serve, daemon=True).start()
    return f"tcp://127.0.0.1:{server.getsockname()[1]}"


def _web_server() -> str:
    """A local HTTP server (the standard library's, serving nothing in particular): its address as ``tcp://``."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"tcp://127.0.0.1:{server.server_address[1]}"


def probe_cases(folder: Path, *, full: bool = False) -> list[Case]:
    """Every case of the probe, its files written under ``folder`` (``full``: the slow ones too)."""
    from tests.model_files import numeric_tables, two_class_onnx

    folder.mkdir(parents=True, exist_ok=True)
    f = folder / "files"
    f.mkdir(exist_ok=True)
    cases: list[Case] = []

    def add(name: str, *argv: str, **kw) -> None:
        cases.append(Case(name, tuple(argv), **kw))

    # ---- tables: tabular, lira, scores, generate, compare, dp-audit
    good = write_good_tables(f)
    tab = ("tabular", "--train", str(good["train"]), "--holdout", str(good["holdout"]), "--synthetic", str(good["synthetic"]))
    lines = good["train"].read_text().splitlines()
    lines[5] = '"' + lines[5]
    unterminated = _write(f, "unterminated.csv", ("\n".join(lines) + "\n").encode())
    add("tabular: a valid run", *tab, expect=ANY, fast=False)
    add("tabular: an unterminated CSV quote", *tab[:2], unterminated, *tab[3:])
    add("tabular: --groups a missing column", *tab, "--groups", "no_such_column")
    add("tabular: --groups with a newline in its name", *tab, "--groups", "a\nb")
    add("tabular: --fail-on a bad level", *tab, "--fail-on", "medium")
    add("tabular: an input from /proc", *tab, "--auxiliary", "/proc/self/environ")
    add("tabular: an input from /dev/zero", *tab, "--auxiliary", "/dev/zero")
    add("tabular: --pdf without Chromium", *tab, "--pdf", str(f / "r.pdf"), env=(("PATH", str(Path(sys.executable).parent)),))
    scores = f / "scores.csv"
    rng = np.random.default_rng(0)
    pd.DataFrame({"score": rng.normal(size=200), "is_member": rng.integers(0, 2, 200)}).to_csv(scores, index=False)
    score = ("scores", "--scores", str(scores))
    add("scores: a valid run", *score, expect=ANY)
    add("scores: --json /dev/full", *score, "--json", "/dev/full", outputs=False)
    add("scores: --records /dev/full", *score, "--records", "/dev/full", outputs=False)
    add("scores: --html /dev/full after --json", *score, "--json", str(f / "first.json"), "--html", "/dev/full", outputs=False)
    add("tabular: --html /dev/full after --json", *tab, "--json", str(f / "first.json"), "--html", "/dev/full", outputs=False,
        fast=False)  # fmt: skip
    add("scores: --json into /proc", *score, "--json", "/proc/self/status", outputs=False)
    os.mkfifo(f / "nobody_reads")
    add("scores: --json a FIFO nobody reads", *score, "--json", str(f / "nobody_reads"), outputs=False)
    add("scores: stdout is /dev/full", *score, stdout="/dev/full")
    import sqlite3

    with sqlite3.connect(f / "scores.db") as db:
        db.execute("CREATE TABLE t (score REAL, is_member INTEGER)")
        db.executemany("INSERT INTO t VALUES (?, ?)", [(float(i) / 10, i % 2) for i in range(50)])
    sqlite = f"sqlite:///{f / 'scores.db'}"
    endless = ("WITH%20RECURSIVE%20c(x)%20AS%20(SELECT%201%20UNION%20ALL%20SELECT%20x%2B1%20FROM%20c)%20"
               "SELECT%20x%20AS%20score,%20x%20AS%20is_member%20FROM%20c")  # fmt: skip
    add("scores: a database query that never ends", "scores", "--scores", f"{sqlite}?query={endless}")
    add("scores: a database query that writes", "scores", "--scores", f"{sqlite}?query=DELETE%20FROM%20t")
    add("scores: a WITH that deletes", "scores", "--scores", f"{sqlite}?query=WITH%20x%20AS%20(SELECT%201)%20DELETE%20FROM%20t")
    add("scores: a database table name that injects", "scores", "--scores", f"{sqlite}?table=t%22%3B%20DROP%20TABLE%20t%3B--")
    add("scores: a text file as a SQLite database", "scores", "--scores", f"sqlite:///{unterminated}?table=t")
    add("scores: an unreachable PostgreSQL server", "scores", "--scores", "postgresql://u:secret@127.0.0.1:1/db?table=t")
    add("scores: --fail-on with a refusal", "scores", "--scores", str(unterminated), "--fail-on", "elevated")
    add("tabular: --scheduler where a silent server listens", *tab, "--scheduler", _silent_server())
    add("tabular: --scheduler where a web server answers HTTP", *tab, "--scheduler", _web_server())
    add("tabular: --scheduler inproc://", *tab, "--scheduler", "inproc://x")

    frame = good_frame(200, seed=5).assign(y=lambda d: (d["age"] > 50).astype(int))
    lira_csv = f / "lira.csv"
    frame.to_csv(lira_csv, index=False)
    inf = frame.astype({"hours": float})
    inf.loc[3, "hours"], inf.loc[7, "hours"] = np.inf, -np.inf
    lira_inf = f / "lira_inf.csv"
    inf.to_csv(lira_inf, index=False)
    distinct = frame.assign(id=[f"r{i}" for i in range(len(frame))])
    lira_ids = f / "lira_ids.csv"
    distinct.to_csv(lira_ids, index=False)
    lira = ("lira", "--data", str(lira_csv), "--target", "y")
    add("lira: +-inf in a feature", "lira", "--data", str(lira_inf), "--target", "y")
    add("lira: --groups a missing column", *lira, "--groups", "nope")
    add("lira: --groups the target", *lira, "--groups", "y")
    add("lira: --scores-out not Parquet", *lira, "--scores-out", str(f / "s.csv"), outputs=False)
    add("lira: --scores-out /dev/full", *lira, "--scores-out", "/dev/full", "--json", str(f / "l.json"), outputs=False,
        fast=False)  # fmt: skip
    add("lira: --records into a folder", *lira, "--records", str(f), outputs=False)
    add("lira: --groups on a column of distinct ids", "lira", "--data", str(lira_ids), "--target", "y", "--groups", "id",
        expect=ANY, fast=False)  # fmt: skip
    if full:
        n = 100_000
        big = pd.DataFrame({"id": [f"r{i}" for i in range(n)], "x": np.random.default_rng(1).normal(size=n)})
        big = big.assign(y=(big["x"] > 0).astype(int))
        big.to_csv(f / "lira_100k.csv", index=False)
        add("lira: --groups on 100,000 distinct values", "lira", "--data", str(f / "lira_100k.csv"), "--target", "y",
            "--groups", "id", expect=ANY, timeout_s=900)  # fmt: skip

    os.mkfifo(f / "fifo_input")
    fifo = str(f / "fifo_input")
    add("tabular: a FIFO as the training table", *tab[:2], fifo, *tab[3:])
    add("lira: a FIFO as the table", "lira", "--data", fifo, "--target", "y")
    add("scores: a FIFO as the score file", "scores", "--scores", fifo)
    add("fabrication: a FIFO as the images", "fabrication", "--images", fifo)
    add("tabular: a Parquet dictionary bomb (1 MB cells x 2,000 rows)", *tab[:2], _write(f, "dict_bomb.parquet",
        parquet_dictionary_bomb()), *tab[3:])  # fmt: skip
    if full:
        add("tabular: a Parquet of 1.2 x 10^8 run-length cells", *tab[:2], _write(f, "cells.parquet", parquet_cell_bomb()),
            *tab[3:])  # fmt: skip
    odd = good_frame(60).rename(columns={"city": "ci\u2028ty\x1b[31m"})
    odd.to_csv(f / "odd_names.csv", index=False)
    add("tabular: a column name with U+2028 and an escape sequence", *tab[:2], str(f / "odd_names.csv"), *tab[3:])

    add("generate: --out /dev/full", "generate", "--train", str(good["train"]), "--generator", "bootstrap", "--out",
        "/dev/full", outputs=False, fast=False)  # fmt: skip
    add("generate: --out a folder", "generate", "--train", str(good["train"]), "--generator", "bootstrap", "--out", str(f),
        outputs=False)  # fmt: skip
    add("compare: an unterminated CSV quote", "compare", "--data", unterminated)
    add("compare: --params that are no pairs", "compare", "--data", str(lira_csv), "--params", "=;=;")
    add("compare: --ignore every column", "compare", "--data", str(lira_csv), "--ignore", "age,hours,sex,city,y")
    add("compare: --json /dev/full", "compare", "--data", str(lira_csv), "--generators", "bootstrap", "--json",
        "/dev/full", outputs=False, fast=False)  # fmt: skip
    add("lira: --records /dev/full", *lira, "--records", "/dev/full", outputs=False, fast=False)
    shadow = ("shadow", "--train", str(good["train"]), "--population", str(good["holdout"]), "--generator", "bootstrap")
    add("shadow: an unterminated CSV quote", "shadow", "--train", unterminated, *shadow[3:])
    add("shadow: --generator-settings that are no JSON object", *shadow, "--generator-settings", "[1, 2")
    add("shadow: --generator-settings a setting the generator lacks", *shadow, "--generator-settings", '{"epochs": 3}')
    add("shadow: --target-rows past the training table", *shadow, "--target-rows", "100000", fast=False)
    add("shadow: an odd number of shadow models", *shadow, "--shadow-models", "7")
    add("shadow: --json /dev/full", *shadow, "--targets", "2", "--shadow-models", "4", "--json", "/dev/full",
        outputs=False, fast=False)  # fmt: skip
    add("dp-audit: a missing target", "dp-audit", "--data", str(lira_csv), "--target", "nope", "--epsilon", "1")
    add("dp-audit: +-inf in a feature", "dp-audit", "--data", str(lira_inf), "--target", "y", "--epsilon", "1")
    add("dp-audit: more canaries than rows", "dp-audit", "--data", str(lira_csv), "--target", "y", "--epsilon", "1",
        "--canaries", "50000")  # fmt: skip
    add("selfcheck: --json a folder", "selfcheck", "--quick", "--json", str(f), outputs=False)
    add("selfcheck: --json /dev/full", "selfcheck", "--quick", "--json", "/dev/full", outputs=False, fast=False)
    add("fpc-sim: --json in a missing folder", "fpc-sim", "--population", "100", "--json", str(f / "no" / "x.json"),
        outputs=False)  # fmt: skip

    # ---- the model audit: hostile model files and mismatches
    tables = numeric_tables(f / "numeric")
    model_tables = ("--train", str(tables["train"]), "--population", str(tables["population"]), "--target", "y")
    good_onnx = _write(f, "good.onnx", two_class_onnx())
    add("model: a valid run", "model", "--model", good_onnx, *model_tables, expect=ANY)
    for name, data in hostile_onnx(folder).items():
        add(f"model: ONNX {name}", "model", "--model", _write(f, f"{name.replace(' ', '_').replace('/', '_')}.onnx", data),
            *model_tables, timeout_s=120)  # fmt: skip
    for name, data in hostile_skops(folder).items():
        path = _write(f, f"{name.replace(' ', '_').replace('/', '_')}.skops", data)
        add(f"model: skops {name}", "model", "--model", path, *model_tables, expect=ANY if "vetted" in name else REFUSE)
    add("model: the target missing", "model", "--model", good_onnx, *model_tables[:4], "--target", "nope")
    add("model: a table whose columns differ", "model", "--model", good_onnx, "--train", str(tables["train"]),
        "--population", str(scores), "--target", "y")  # fmt: skip
    images = npz_bytes(**{k: v for k, v in image_arrays().items() if k != "is_member"})
    members, population = _write(f, "members.npz", images), _write(f, "population.npz", images)
    for name, data in hostile_safetensors().items():
        path = _write(f, f"{name.replace(' ', '_')}.safetensors", data)
        add(f"model: safetensors {name}", "model", "--model", path, "--train", members, "--population", population)
        add(f"fabrication: safetensors {name}", "fabrication", "--images", str(f / "png_good"), "--model", path,
            fast=name in ("NaN weights", "huge shapes"))  # fmt: skip
    from audit_core.fabrication.architectures import SmallCNN

    cnn = _write(f, "cnn.safetensors", safetensors_bytes({k: v.numpy() for k, v in SmallCNN(1, 3).state_dict().items()}))
    for name, data in hostile_npz(folder).items():
        add(f"model: npz {name}", "model", "--model", cnn, "--train", _write(f, f"m_{name.replace(' ', '_')}.npz", data),
            "--population", population)  # fmt: skip
    add("model: an image model with tables", "model", "--model", cnn, *model_tables)
    add("model: a table model with images", "model", "--model", good_onnx, "--train", members, "--population", population)

    # ---- dp-audit-model: canary files
    dp = ("dp-audit-model", "--model", good_onnx, "--target", "y", "--epsilon", "1")
    canary_good = f / "canaries.csv"
    canary_table().to_csv(canary_good, index=False)
    add("dp-audit-model: a valid run", *dp, "--canaries-file", str(canary_good), expect=ANY)
    for name, table in hostile_canaries(full=full).items():
        path = f / f"canaries_{''.join(c if c.isalnum() else '_' for c in name)}.csv"
        table.to_csv(path, index=False)
        add(f"dp-audit-model: canaries {name}", *dp, "--canaries-file", str(path), fast="rows" not in name)
    add("dp-audit-model: a FIFO as the canary file", *dp, "--canaries-file", fifo)
    add("model: a FIFO as the model", "model", "--model", fifo, *model_tables)
    add("dp-audit-model: a pickle as the model", "dp-audit-model", "--model", _write(f, "m.pkl", payload_pickle(folder)),
        "--canaries-file", str(canary_good), "--target", "y", "--epsilon", "1")  # fmt: skip

    # ---- fabrication: PNG folders and trusted TorchScript
    png_folder(f / "png_good")
    for name, path in hostile_png_folders(f / "png").items():
        add(f"fabrication: PNG folder, {name}", "fabrication", "--images", str(path), "--steps", "2")
    for name, path in torchscript_models(f / "torchscript").items():
        runs = name in ("valid", "frozen", "no parameters")
        add(f"fabrication: trusted TorchScript, {name}", "fabrication", "--images", str(f / "png_good"), "--model", str(path),
            "--model-format", "torchscript", "--trust-torchscript", "--steps", "2", expect=ANY if runs else REFUSE,
            fast=not runs or name == "frozen")  # fmt: skip
    add("fabrication: TorchScript without trust", "fabrication", "--images", str(f / "png_good"), "--model",
        str(f / "torchscript" / "valid.pt"), "--model-format", "torchscript")  # fmt: skip
    return cases


def probe(folder: Path, *, fast: bool, in_process: bool, only: str = "", full: bool = False, verbose: bool = False,
          report=print) -> dict[str, list[Verdict]]:  # fmt: skip
    """Run the probe's cases (``fast``: the CI subset); ``{kind: [verdicts]}`` for every kind of :data:`KINDS`, and
    ``clean`` / ``runs`` for the cases that were refused cleanly / ran."""
    cases = [c for c in probe_cases(folder, full=full) if (c.fast or not fast) and only in c.name]
    found: dict[str, list[Verdict]] = {kind: [] for kind in (*KINDS, "clean", "runs")}
    for case in cases:
        if verbose:
            report(f"... {case.name}")
        verdict = run_case(case, folder, in_process=in_process)
        for problem in verdict.problems:
            found[problem].append(verdict)
        if not verdict.problems:
            found["runs" if verdict.status in (0, 3) else "clean"].append(verdict)
        else:
            report(verdict.line())
    report(f"{len(cases)} cases over {len({c.argv[0] for c in cases})} subcommands: {len(found['clean'])} clean refusals, "
           f"{len(found['runs'])} runs; " + ", ".join(f"{k}: {len(found[k])}" for k in KINDS))  # fmt: skip
    return found


if __name__ == "__main__":
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="The attacker probe: every subcommand on hostile inputs.")
    parser.add_argument("--fast", action="store_true", help="only the cases CI runs")
    parser.add_argument("--in-process", action="store_true", help="run each case in this process (fast), not as a process")
    parser.add_argument("--full", action="store_true", help="add the slow cases (a 100,000-row table, 10^6 canaries)")
    parser.add_argument("--only", default="", help="the cases whose name holds this text")
    parser.add_argument("--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        found = probe(Path(tmp), fast=args.fast, in_process=args.in_process, only=args.only, full=args.full,
                      verbose=args.verbose, report=lambda line: print(line, flush=True))
        if args.verbose:
            for verdict in [*found["clean"], *found["runs"]]:
                print(verdict.line())
    raise SystemExit(1 if any(found[k] for k in KINDS) else 0)
