"""Load an uploaded model without running any code from it: ONNX (onnxruntime) or scikit-learn (skops).

(The third kind, safetensors weights of the built-in image architectures, is read by
:mod:`audit_core.model.images`; :func:`read_model_bytes` lets it through and refuses pickles alike.)

The file's bytes decide its format, never its name:

- a pickle (first byte 0x80 followed by a protocol number 2 to 5) is refused, whatever its suffix:
  unpickling runs code, so a ``.pkl`` (or a pickle renamed ``.onnx`` / ``.skops``) is never opened;
- a zip archive is read as a skops file: :func:`skops.io.get_untrusted_types` lists the types the
  file would build; any outside skops' default trusted set, this audit's vetted list
  (:data:`audit_core.model.skops_types.VETTED_TYPES`: the tree storage of forests and boosting,
  an MLP's optimiser state, ...) and the steward's explicit ``trusted`` list refuses the file
  with those types named, *before* anything is built; then ``skops.io.loads(..., trusted=...)``
  builds it (skops never unpickles; it reconstructs from a JSON schema and refuses anything
  untrusted itself too), and :func:`~audit_core.model.skops_types.check_vetted` checks every
  tree's node indices before the model predicts anything;
- anything else must parse as an ONNX protobuf. The graph is checked before onnxruntime sees
  it: every operator must be in the standard domains (``''``, ``ai.onnx``, ``ai.onnx.ml``: custom
  operators are native code the runtime would have to load), and no tensor may keep its data in
  an external file (an upload is one self-contained file; a location could point anywhere on the
  server). Only then is an :class:`onnxruntime.InferenceSession` made (CPU, one thread: the same
  bytes give the same scores on any machine).

The input contract (documented on the page and in the README): the model takes the table's
feature columns (every column but the target) as they are, numeric columns as floats.

- ONNX with one input of shape ``[N, d]``: ``d`` must equal the number of feature columns, all of
  them numeric, in the table's column order (minus the target);
- ONNX with one input per column (what ``skl2onnx`` makes of a DataFrame pipeline): each input is
  named after its column and gets an ``[N, 1]`` tensor of its declared type (float, double, int64
  or string);
- skops: ``predict_proba`` on a DataFrame of the feature columns when the estimator knows its
  ``feature_names_in_`` (an sklearn Pipeline with its own encoder handles categoricals), else on
  the numeric matrix in table order.

The class-probability output: an output named like ``prob`` (or the last float output ``[N, C]``),
or a ZipMap (a list of ``{label: probability}``). An output whose rows all sum to 1 (within float
tolerance) is probabilities, its float32 rounding below 0 clipped; any other is read as logits and
softmaxed. The class order comes from the model when
it says it (skops ``classes_``, ZipMap keys, the ``classlabels_*`` of an ``ai.onnx.ml`` classifier
node), else it is the sorted order of the labels (scikit-learn's ``classes_``).
"""

from __future__ import annotations

import io
import os
import stat
import warnings
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from audit_core.common.errors import InputError
from audit_core.common.limits import MAX_MODEL_MB, MODEL_FIRST_SECONDS
from audit_core.common.runtime import blas_threads
from audit_core.common.table_files import shortened
from audit_core.model.recipe import NO_RECIPE, Recipe, recipe_of_estimator, recipe_of_onnx
from audit_core.model.skops_types import VETTED_TYPES, check_vetted

__all__ = ["TargetModel", "is_safetensors", "label_text", "load_model", "read_model_bytes"]

_ALLOWED_DOMAINS = ("", "ai.onnx", "ai.onnx.ml")
"""Operator domains an uploaded ONNX model may use (the standard ones; custom operators are native code)."""

_FORMATS = ("onnx", "skops")
_FIRST_ROWS = 64
"""Records an ONNX model scores first, within :data:`~audit_core.common.limits.MODEL_FIRST_SECONDS`, before it gets
all of them (within a time scaled from that first run)."""
_MAX_NODES = 20_000
"""Most operators (and most stored tensors) an ONNX graph may have, subgraphs included: a scikit-learn forest is one
TreeEnsemble operator, a torch ResNet a few hundred; onnxruntime takes 12 s to set up 50,000."""
_CHUNK_ROWS = 4096
"""Records an ONNX model scores in one run (outputs and intermediate tensors grow with it)."""
_MAX_OUTPUT_COLUMNS = 10_000
"""Most scores per record an ONNX model may give (a table's label column has far fewer classes)."""
_MAX_ARCHIVE_MB = 4 * MAX_MODEL_MB
"""Most a skops archive may inflate to, in MiB, as its zip directory declares."""
_MAX_SCHEMA_MB = 64
"""Most a skops archive's schema.json may inflate to, in MiB (a forest of 500 deep trees writes a few MB)."""
_MAX_TENSOR_VALUES = 2**28
"""Most values of a tensor whose size the graph fixes whatever the records (1 GiB of float32)."""
_CLASSIFIER_OPS = {"TreeEnsembleClassifier", "LinearClassifier", "SVMClassifier", "TreeEnsemble"}
_ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(int64)": np.int64,
              "tensor(int32)": np.int32, "tensor(string)": object}  # fmt: skip


def label_text(value: Any) -> str:
    """A class label as text, the same for ``1``, ``1.0``, ``np.int64(1)`` and ``"1"`` (labels are matched on it)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, bool | np.bool_):
        return str(bool(value))
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value).strip()


def _is_pickle(data: bytes) -> bool:
    """True for a pickle stream (protocol 2 to 5 start with 0x80 and the protocol number)."""
    return len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5


def is_safetensors(data: bytes) -> bool:
    """True for a safetensors file (an image model of the fabrication architectures, :mod:`audit_core.model.images`)."""
    from audit_core.common.model_files import sniff_model_format

    return sniff_model_format(data) == "safetensors"


def read_model_bytes(source: Any, name: str) -> bytes:
    """The raw bytes of a model file (a path on the CLI, an upload's bytes on the page); nothing is parsed.

    Refuses a missing or oversized file and a pickle, with one sentence each.
    """
    limit = MAX_MODEL_MB * 1024 * 1024
    too_big = InputError(f"Model '{name}' is larger than the {MAX_MODEL_MB} MB limit.")
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            st = path.stat()
        except OSError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            raise InputError(f"Model '{name}': there is no file at '{shortened(str(path))}'; check the path.")
        if st.st_size > limit:
            raise too_big
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"Model '{name}': the file cannot be read ({exc.strerror}).") from None
    elif hasattr(source, "read"):
        data = source.read(limit + 1)
    else:
        raise InputError(f"Model '{name}' must be a file path or bytes, not {type(source).__name__}.")
    if len(data) > limit:
        raise too_big
    if not data:
        raise InputError(f"Model '{name}' is an empty file.")
    if _is_pickle(data) and not is_safetensors(data):  # a safetensors header length may start like a pickle
        raise InputError(
            f"Model '{name}' is a Python pickle, which can run any code when opened, so it is never loaded; "
            "export the model to ONNX (skl2onnx, torch.onnx), save it with skops, or save an image model's weights "
            "with safetensors."
        )
    return data


@dataclass(frozen=True)
class TargetModel:
    """An uploaded model, checked and ready to give class probabilities for a table's feature columns.

    Attributes
    ----------
    format : {"onnx", "skops"}
    classes : tuple of str or None
        The model's class labels in the order of its probability columns (``label_text``), when it says.
    n_inputs : int or None
        The width of a single-matrix input, when the model declares it.
    description : str
        One line for the report (format, inputs, output).
    recipe : Recipe
        The target's kind and hyper-parameters as the file carries them (:mod:`audit_core.model.recipe`).
    """

    format: str
    classes: tuple[str, ...] | None
    n_inputs: int | None
    description: str
    sha256: str
    _impl: Any = field(repr=False, compare=False)
    recipe: Recipe = NO_RECIPE

    def predict_proba(self, features: pd.DataFrame, *, classes: Sequence[str]) -> np.ndarray:
        """``(n, len(classes))`` float64 probabilities, columns in the order of ``classes`` (label texts).

        ``features`` holds the feature columns in table order (numeric float64, categorical ``str``).
        Raises :class:`InputError` when the model's inputs or outputs do not fit these columns and labels.
        """
        raw, model_classes = self._impl(features)
        raw = np.asarray(raw, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[0] != len(features):
            raise InputError(
                f"The model returned an output of shape {tuple(raw.shape)} for {len(features):,} records; "
                "it must give one row of class probabilities (or logits) per record."
            )
        return _align_classes(_as_probabilities(raw), model_classes, list(classes))


_SUM_TOLERANCE = 1e-3
"""How far from 1 a row of probabilities may sum (float32 sums of hundreds of trees are off by about 1e-7 each)."""
_ROUNDING = 1e-4
"""How far below 0 a probability may fall by rounding (a pure leaf's ``1 - sum`` in float32 gives about -1e-7)."""


def _as_probabilities(raw: np.ndarray) -> np.ndarray:
    """Class probabilities from a model's output: probabilities as they are (rounding clipped), else softmaxed logits.

    An output whose every row sums to 1 within :data:`_SUM_TOLERANCE`, with no value below
    ``-_ROUNDING``, is read as probabilities: float32 rounding (an ONNX forest's pure leaves give
    ``-2.4e-08``) is clipped to ``[0, 1]`` and each row renormalised. Anything else is logits.
    """
    if not np.all(np.isfinite(raw)):
        raise InputError("The model's output holds NaN or infinite values for some records; it cannot be scored.")
    if raw.min() >= -_ROUNDING and raw.max() <= 1.0 + _ROUNDING and np.allclose(raw.sum(1), 1.0, atol=_SUM_TOLERANCE, rtol=0):
        p = np.clip(raw, 0.0, 1.0)
        return p / p.sum(1, keepdims=True)
    z = raw - raw.max(1, keepdims=True)  # logits -> softmax, stably
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


def _align_classes(p: np.ndarray, model_classes: Sequence[str] | None, classes: list[str]) -> np.ndarray:
    if model_classes is None:
        if p.shape[1] != len(classes):
            raise InputError(
                f"The model's output has {p.shape[1]} classes but the label column has {len(classes)} "
                f"({', '.join(repr(c) for c in classes[:10])}); upload the model trained on this label column."
            )
        return p
    model_classes = [label_text(c) for c in model_classes]
    if len(model_classes) != p.shape[1]:
        raise InputError(
            f"The model names {len(model_classes)} classes but its output has {p.shape[1]} columns; "
            "the file is inconsistent."
        )
    missing = [c for c in classes if c not in model_classes]
    if missing:
        raise InputError(
            f"The model's output has {len(model_classes)} classes ({', '.join(repr(c) for c in model_classes[:10])}) "
            f"but the label column also has {', '.join(repr(c) for c in missing[:10])}; upload the model trained "
            "on this label column, or check the target column."
        )
    return p[:, [model_classes.index(c) for c in classes]]


# ----------------------------------------------------------------------------------------------------------- ONNX
def _walk_graph(graph: Any):
    """Every node of a graph and of its subgraphs (If / Loop / Scan bodies)."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            for g in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from _walk_graph(g)


def _tensors(model: Any):
    """Every tensor stored in the model: initializers, sparse initializers and constant attributes, recursively."""

    def in_graph(graph: Any):
        yield from graph.initializer
        for sparse in graph.sparse_initializer:
            yield sparse.values  # noqa: PD011 - a protobuf field, not pandas
            yield sparse.indices
        for node in graph.node:
            for attr in node.attribute:
                if attr.HasField("t"):
                    yield attr.t
                yield from attr.tensors
                if attr.HasField("g"):
                    yield from in_graph(attr.g)
                for g in attr.graphs:
                    yield from in_graph(g)

    yield from in_graph(model.graph)


def _check_onnx(model: Any, name: str) -> None:
    from onnx import TensorProto

    if len(model.graph.node) == 0 or len(model.graph.output) == 0:
        raise InputError(
            f"Model '{name}' is neither an ONNX model nor a skops file (no graph could be read from it); "
            "export the model to ONNX or save it with skops."
        )
    nodes = list(_walk_graph(model.graph))
    n_tensors = sum(1 for _ in _tensors(model))
    if len(nodes) > _MAX_NODES or n_tensors > _MAX_NODES:
        raise InputError(
            f"Model '{name}' has {len(nodes):,} operators and {n_tensors:,} stored tensors; at most {_MAX_NODES:,} of "
            "each are accepted (onnxruntime's set-up time grows faster than the graph); export a smaller graph."
        )
    domains = {o.domain for o in model.opset_import} | {n.domain for n in nodes}
    custom = sorted(d for d in domains if d not in _ALLOWED_DOMAINS)
    if custom or len(model.functions):
        what = ", ".join(repr(d) for d in custom) if custom else "model-local functions"
        raise InputError(
            f"Model '{name}' uses custom operators ({what}), which would load native code into the server, so it is "
            "refused; export it with the standard ONNX operators only (domains '', 'ai.onnx', 'ai.onnx.ml')."
        )
    for tensor in _tensors(model):
        if tensor.data_location == TensorProto.EXTERNAL or len(tensor.external_data):
            where = next((e.value for e in tensor.external_data if e.key == "location"), "?")
            raise InputError(
                f"Model '{name}' keeps tensor '{shortened(tensor.name, 40)}' in an external file "
                f"('{shortened(where, 60)}'), which is never read; save the model as one self-contained .onnx file."
            )
        _check_stored(tensor, name)
    _check_static_sizes(model, name)


def _check_stored(tensor: Any, name: str) -> None:
    """A tensor holds the values its shape declares (a 16-byte tensor declaring 10^10 values is refused, not allocated)."""
    from onnx import TensorProto, helper

    dims = list(tensor.dims)
    declared = int(np.prod(dims, dtype=object)) if dims else 1
    if any(d < 0 for d in dims):
        raise InputError(f"Model '{name}' declares tensor '{shortened(tensor.name, 40)}' with a negative dimension {dims}.")
    if tensor.data_type in (TensorProto.UNDEFINED, TensorProto.STRING):
        stored = len(tensor.string_data) if tensor.data_type == TensorProto.STRING else declared
    elif tensor.HasField("raw_data"):
        try:
            itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
        except (KeyError, TypeError, ValueError):
            return  # an exotic type: onnxruntime checks it
        stored = len(tensor.raw_data) // max(itemsize, 1)
        if tensor.data_type in (TensorProto.INT4, TensorProto.UINT4):
            stored *= 2  # two values a byte
    else:
        stored = max(len(tensor.float_data), len(tensor.int32_data), len(tensor.int64_data), len(tensor.double_data),
                     len(tensor.uint64_data))  # fmt: skip
        if tensor.data_type in (TensorProto.COMPLEX64, TensorProto.COMPLEX128):
            stored //= 2
    if declared > stored and declared > 1:
        raise InputError(
            f"Model '{name}' declares tensor '{shortened(tensor.name, 40)}' of shape {dims} ({declared:,} values) but "
            f"stores {stored:,}; the file is truncated or forged."
        )


def _check_static_sizes(model: Any, name: str) -> None:
    """No tensor whose size the graph fixes (a ConstantOfShape, Expand or Tile of constant shape) may exceed
    :data:`_MAX_TENSOR_VALUES` values: a few bytes of graph must not ask the server for terabytes."""
    from onnx import shape_inference

    try:
        inferred = shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # inference is best effort here: onnxruntime refuses a graph it cannot type
        return
    for info in [*inferred.graph.value_info, *inferred.graph.output]:
        if not info.type.HasField("tensor_type"):
            continue
        dims = [d.dim_value for d in info.type.tensor_type.shape.dim if d.HasField("dim_value")]
        values = int(np.prod(dims, dtype=object)) if dims else 1
        if values > _MAX_TENSOR_VALUES:
            raise InputError(
                f"Model '{name}' builds a tensor '{shortened(info.name, 40)}' of shape {dims} ({values:,} values, over "
                f"the {_MAX_TENSOR_VALUES:,} accepted), whatever the records; it is refused before it runs."
            )


def _onnx_classes(model: Any) -> tuple[str, ...] | None:
    labels = None
    for node in _walk_graph(model.graph):
        if node.op_type in _CLASSIFIER_OPS:
            for attr in node.attribute:
                if attr.name == "classlabels_strings" and len(attr.strings):
                    labels = tuple(s.decode("utf-8", "replace") for s in attr.strings)
                elif attr.name in ("classlabels_int64s", "classlabels_ints") and len(attr.ints):
                    labels = tuple(str(int(v)) for v in attr.ints)
    return labels


def _load_onnx(data: bytes, name: str) -> TargetModel:
    import onnx
    import onnxruntime as ort
    from google.protobuf.message import DecodeError

    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError, TypeError):
        raise InputError(
            f"Model '{name}' is neither an ONNX model nor a skops file (it does not parse as either); "
            "export the model to ONNX or save it with skops."
        ) from None
    _check_onnx(model, name)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # deterministic sums: the same file gives byte-identical scores
    options.inter_op_num_threads = 1
    options.log_severity_level = 4  # fatal only: onnxruntime's own error lines would add to the one sentence on stderr
    try:
        session = ort.InferenceSession(data, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own exception classes for an invalid graph
        raise InputError(f"Model '{name}' is not a valid ONNX model onnxruntime can run ({_first_line(exc)}).") from None
    inputs, outputs = session.get_inputs(), session.get_outputs()
    prob = _probability_output(outputs, name)
    zipmap = prob.type.startswith("seq(")
    graph_classes = _onnx_classes(model)
    n_inputs = None
    if len(inputs) == 1 and len(inputs[0].shape) == 2 and isinstance(inputs[0].shape[1], int) and inputs[0].shape[1] > 1:
        n_inputs = int(inputs[0].shape[1])
    for i in inputs:
        if i.type not in _ORT_TYPES:
            raise InputError(f"Model '{name}' takes input '{i.name}' of type {i.type}; only float, int and string "
                             "tensors can be fed from a table.")  # fmt: skip

    def predict(features: pd.DataFrame) -> tuple[np.ndarray, Sequence[str] | None]:
        feeds = _onnx_feeds(inputs, features, name)
        result = _run_bounded(session, prob.name, feeds, name)
        if zipmap:
            keys = list(result[0].keys()) if len(result) else []
            return np.array([[row[k] for k in keys] for row in result], dtype=np.float64), [label_text(k) for k in keys]
        return np.asarray(result), graph_classes

    shape = "one input per column" if len(inputs) > 1 else f"input '{inputs[0].name}' {inputs[0].shape}"
    desc = f"ONNX (opset {max((o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')), default=0)}), " \
           f"{shape}, output '{prob.name}'"  # fmt: skip
    return TargetModel("onnx", graph_classes, n_inputs, desc, _sha(data), predict, recipe=recipe_of_onnx(model))


def _run_bounded(session: Any, output: str, feeds: dict[str, np.ndarray], name: str) -> Any:
    """``session.run`` on the first :data:`_FIRST_ROWS` records within :data:`~audit_core.common.limits.MODEL_FIRST_SECONDS`,
    then on all of them, :data:`_CHUNK_ROWS` at a time (memory bounded by the chunk, not the table), each within ten
    times the time per record of the first run (and a minute more): a graph that loops (a Loop of 2^62 turns) is
    stopped through onnxruntime's ``RunOptions.terminate``, and an output of more than :data:`_MAX_OUTPUT_COLUMNS`
    scores per record is refused after the first run; each is one sentence."""
    import threading
    import time

    import onnxruntime as ort

    n = len(next(iter(feeds.values())))

    def run(part: dict[str, np.ndarray], seconds: float) -> Any:
        options = ort.RunOptions()
        options.log_severity_level = 4
        timer = threading.Timer(seconds, lambda: setattr(options, "terminate", True))
        timer.daemon = True
        timer.start()
        try:
            return session.run([output], part, options)[0]
        except Exception as exc:
            if options.terminate:
                raise InputError(f"Model '{name}' did not finish scoring {len(next(iter(part.values()))):,} records "
                                 f"within {seconds:,.0f} s (a graph that loops?), so it was stopped.") from None  # fmt: skip
            raise InputError(f"Model '{name}' failed on these records ({_first_line(exc)}).") from None
        finally:
            timer.cancel()

    start = time.perf_counter()
    first = run({k: v[:_FIRST_ROWS] for k, v in feeds.items()}, MODEL_FIRST_SECONDS)
    width = len(first[0]) if isinstance(first, list) and first else (first.shape[-1] if getattr(first, "ndim", 0) == 2 else 1)
    if width > _MAX_OUTPUT_COLUMNS:
        raise InputError(f"Model '{name}' gives {width:,} scores per record; a classifier of a table's label column "
                         f"gives one per class (at most {_MAX_OUTPUT_COLUMNS:,} are accepted).")  # fmt: skip
    if n <= _FIRST_ROWS:
        return first
    per_row = (time.perf_counter() - start) / min(n, _FIRST_ROWS)
    parts = [run({k: v[i : i + _CHUNK_ROWS] for k, v in feeds.items()}, 60.0 + 10.0 * per_row * min(_CHUNK_ROWS, n - i))
             for i in range(0, n, _CHUNK_ROWS)]  # fmt: skip
    if isinstance(parts[0], list):  # ZipMap: a list of {label: probability} per record
        return [row for part in parts for row in part]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return shortened(text[0] if text else type(exc).__name__, 160)


def _probability_output(outputs: Sequence[Any], name: str) -> Any:
    named = [o for o in outputs if "prob" in o.name.lower() or "logit" in o.name.lower()]
    floats = [o for o in outputs if o.type in ("tensor(float)", "tensor(double)") and len(o.shape) == 2]
    maps = [o for o in outputs if o.type.startswith("seq(map(")]
    pick = (named or floats or maps or [None])[0]
    if pick is None:
        raise InputError(
            f"Model '{name}' has no output of class probabilities or logits (a float tensor [N, classes]); its outputs "
            f"are {', '.join(repr(o.name) for o in outputs)}."
        )
    return pick


def _onnx_feeds(inputs: Sequence[Any], features: pd.DataFrame, name: str) -> dict[str, np.ndarray]:
    columns = list(features.columns)
    if len(inputs) == 1 and inputs[0].name not in columns:
        i = inputs[0]
        width = i.shape[1] if len(i.shape) == 2 else None
        if isinstance(width, int) and width != len(columns):
            raise InputError(
                f"Model '{name}' takes {width} features but the table has {len(columns)} feature columns (every column "
                "but the target, in table order); give the table the model was trained on, or export a model that takes "
                "these columns."
            )
        text = [c for c in columns if features[c].dtype == object]
        if text:
            raise InputError(
                f"Model '{name}' takes one numeric matrix but column(s) {', '.join(repr(c) for c in text[:5])} hold text; "
                "encode them as numbers in the table, or export a pipeline with its encoder (one input per column)."
            )
        return {i.name: features.to_numpy(dtype=_ORT_TYPES[i.type])}
    missing = [i.name for i in inputs if i.name not in columns]
    if missing:
        raise InputError(
            f"Model '{name}' takes inputs named {', '.join(repr(m) for m in missing[:5])}, which are not columns of the "
            "table; each input of a multi-input model must be named after a feature column."
        )
    feeds = {}
    for i in inputs:
        col = features[i.name]
        kind = _ORT_TYPES[i.type]
        if kind is object:
            values = col.astype("string").fillna("").to_numpy(dtype=object)
        elif col.dtype == object:
            raise InputError(f"Model '{name}' takes column '{i.name}' as numbers but it holds text.")
        else:
            values = col.to_numpy(dtype=np.float64)
            if np.issubdtype(kind, np.integer) and np.isnan(values).any():
                raise InputError(f"Model '{name}' takes column '{i.name}' as integers but it has missing values.")
            values = values.astype(kind)
        feeds[i.name] = values.reshape(-1, 1)
    return feeds


# ---------------------------------------------------------------------------------------------------------- skops
def _load_skops(data: bytes, name: str, trusted: Sequence[str]) -> TargetModel:
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(data=data)
    except Exception as exc:  # a zip that is no skops file: skops raises KeyError / JSON errors
        raise InputError(f"Model '{name}' is a zip archive but not a skops file ({_first_line(exc)}).") from None
    allowed = set(trusted) | set(VETTED_TYPES)
    refused = [t for t in untrusted if t not in allowed]
    if refused:
        raise InputError(
            f"Model '{name}' contains type(s) outside skops' trusted set and this audit's vetted list, so it is not "
            f"loaded: {', '.join(refused[:10])}{' ...' if len(refused) > 10 else ''}; if you made this file yourself "
            "and trust them, list them with --trust-skops-types (page: 'Trusted skops types')."
        )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # version mismatch warnings of sklearn; the fidelity check shows the effect
            estimator = sio.loads(data, trusted=[t for t in untrusted if t in allowed] or None)
    except Exception as exc:
        raise InputError(f"Model '{name}' could not be rebuilt by skops ({_first_line(exc)}).") from None
    check_vetted(estimator, name)  # before anything runs on it: every tree's node indices inside the tree
    if not hasattr(estimator, "predict_proba") or not hasattr(estimator, "classes_"):
        raise InputError(
            f"Model '{name}' holds a {type(estimator).__name__}, which gives no class probabilities (predict_proba); "
            "upload a fitted classifier."
        )
    names = getattr(estimator, "feature_names_in_", None)
    n_in = getattr(estimator, "n_features_in_", None)

    def predict(features: pd.DataFrame) -> tuple[np.ndarray, Sequence[str]]:
        columns = list(features.columns)
        if names is not None:
            missing = [str(c) for c in names if str(c) not in columns]
            if missing:
                raise InputError(
                    f"Model '{name}' was trained with column(s) {', '.join(repr(m) for m in missing[:5])}, which the "
                    "table does not have (the target is not a feature)."
                )
            X: Any = features[[str(c) for c in names]]
        else:
            if n_in is not None and int(n_in) != len(columns):
                raise InputError(
                    f"Model '{name}' takes {int(n_in)} features but the table has {len(columns)} feature columns (every "
                    "column but the target, in table order)."
                )
            text = [c for c in columns if features[c].dtype == object]
            if text:
                raise InputError(
                    f"Model '{name}' was trained on a numeric matrix but column(s) {', '.join(repr(c) for c in text[:5])} "
                    "hold text; save a pipeline with its encoder, or encode those columns in the table."
                )
            X = features.to_numpy(dtype=np.float64)
        try:
            with warnings.catch_warnings(), blas_threads(1):  # OpenMP threads only stall on a shared machine
                warnings.simplefilter("ignore")
                p = estimator.predict_proba(X)
        except Exception as exc:
            raise InputError(f"Model '{name}' failed on these records ({_first_line(exc)}).") from None
        return p, [label_text(c) for c in estimator.classes_]

    classes = tuple(label_text(c) for c in estimator.classes_)
    desc = f"scikit-learn {type(estimator).__name__} (skops), {len(classes)} classes"
    return TargetModel("skops", classes, int(n_in) if n_in is not None and names is None else None, desc, _sha(data),
                       predict, recipe=recipe_of_estimator(estimator))  # fmt: skip


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def load_model(data: bytes, name: str, *, trusted: Sequence[str] = ()) -> TargetModel:
    """A :class:`TargetModel` from a file's bytes (see the module docstring); one sentence for anything refused.

    Parameters
    ----------
    data : bytes
        The file (from :func:`read_model_bytes`).
    name : str
        Its name, for messages.
    trusted : sequence of str
        skops types the steward explicitly trusts beyond skops' defaults and
        :data:`~audit_core.model.skops_types.VETTED_TYPES` (which holds ``sklearn.tree._tree.Tree``, left out of
        skops' defaults because a crafted one can crash the process: its nodes are checked here).
    """
    data = read_model_bytes(data, name)
    if data[:4] == b"PK\x03\x04":
        _check_archive(data, name)
        return _load_skops(data, name, trusted)
    return _load_onnx(data, name)


def _check_archive(data: bytes, name: str) -> None:
    """A zip is looked at before skops opens it: its members' names (none absolute or climbing out with ``..``, none
    twice), their declared sizes (at most :data:`_MAX_ARCHIVE_MB` in all, the schema at most :data:`_MAX_SCHEMA_MB`:
    a zip bomb is refused from its directory, never inflated), and no pickle inside (``torch.save`` writes one)."""
    from audit_core.common.model_files import MAX_ZIP_MEMBERS, zip_members

    declared = zip_members(data[-65_557:])
    if declared is not None and declared > MAX_ZIP_MEMBERS:
        raise InputError(f"Model '{name}' is a zip of {declared:,} members; a skops file has far fewer (at most "
                         f"{MAX_ZIP_MEMBERS:,} are accepted).")  # fmt: skip
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise InputError(f"Model '{name}' looks like a zip archive but is damaged.") from None
    names = [i.filename for i in infos]
    climbing = next((n for n in names if n.startswith(("/", "\\")) or ".." in n.replace("\\", "/").split("/")
                     or "\x00" in n or ":" in n.split("/")[0]), None)  # fmt: skip
    if climbing is not None:
        raise InputError(f"Model '{name}' holds a member named '{shortened(climbing, 60)}', a path out of the archive; "
                         "it is not a file skops wrote, so it is refused.")  # fmt: skip
    if len(set(names)) != len(names):
        raise InputError(f"Model '{name}' holds two members of the same name; it is not a file skops wrote.")
    if any(n.endswith(".pkl") or n.endswith("/data.pkl") for n in names):
        raise InputError(f"Model '{name}' is a torch.save archive (a pickle inside a zip), which can run any code when "
                         "opened, so it is never loaded; export the model to ONNX or save it with skops.")  # fmt: skip
    total = sum(i.file_size for i in infos)
    schema = sum(i.file_size for i in infos if i.filename == "schema.json")
    if total > _MAX_ARCHIVE_MB * 2**20 or schema > _MAX_SCHEMA_MB * 2**20:
        raise InputError(f"Model '{name}' would inflate to {total / 2**20:,.0f} MB (its schema to {schema / 2**20:,.0f} "
                         f"MB); at most {_MAX_ARCHIVE_MB:,} MB (schema {_MAX_SCHEMA_MB} MB) are accepted.")  # fmt: skip
