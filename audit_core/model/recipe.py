"""The target's recipe: which reference family its kind is, and the hyper-parameters its file carries.

Reference models are only as strong as they are close to the target (the fidelity check), so a
family of the target's own kind should be trained the way the target was. What the file says:

- **skops**: the fitted estimator itself (the last step of a Pipeline). A
  ``RandomForestClassifier`` is the ``random_forest`` family, ``ExtraTreesClassifier``
  ``extra_trees``, ``HistGradientBoostingClassifier`` and ``GradientBoostingClassifier``
  ``gbdt``, ``LogisticRegression`` ``logistic``, ``MLPClassifier`` ``mlp``; its constructor
  parameters are kept (scalars and tuples), except what depends on the target's own columns,
  labels or machine (random state, threads, categorical or monotonic constraints, a class-weight
  dictionary, an initial estimator), which the reference models' encoding does not share;
- **ONNX**: the graph. A ``TreeEnsembleClassifier`` without a post-transform averages its trees:
  a forest (``random_forest``; random forests and extra trees look alike in ONNX, so
  ``extra_trees`` gets the same numbers) with ``n_estimators`` = its number of trees and
  ``max_depth`` = none when every leaf is pure (fully grown), else its deepest tree; with a
  logistic or softmax post-transform it is boosting (``gbdt``: HistGradientBoosting with as many
  rounds, the deepest tree's depth and the most leaves of a tree; the learning rate is folded into
  the leaves and not recoverable). A ``LinearClassifier`` is ``logistic`` (its regularisation is
  not in the file). Dense layers (``MatMul`` or ``Gemm`` with a weight matrix) with ``Relu`` /
  ``Tanh`` / ``Sigmoid`` between them are an ``mlp`` with those hidden sizes and activation;
- anything else: no family (the reference families keep their defaults).

Sizes read from a file are capped (:data:`CAPS`), so that a file cannot make the audit train a
million trees; a capped value is said in ``notes``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["CAPS", "NO_RECIPE", "Recipe", "recipe_of_estimator", "recipe_of_onnx"]

_SKLEARN_FAMILIES = {
    "RandomForestClassifier": "random_forest",
    "ExtraTreesClassifier": "extra_trees",
    "HistGradientBoostingClassifier": "gbdt",
    "GradientBoostingClassifier": "gbdt",
    "LogisticRegression": "logistic",
    "MLPClassifier": "mlp",
}
"""scikit-learn classifier -> the reference family of its kind."""
_DROPPED = {"random_state", "n_jobs", "verbose", "warm_start", "categorical_features", "monotonic_cst",
            "interaction_cst", "init", "oob_score", "class_weight"}  # fmt: skip
"""Parameters tied to the target's columns, labels or machine (a 'balanced' class weight is kept: see _params)."""
CAPS = {"n_estimators": 1000, "max_iter": 2000, "hidden_layer_sizes": 4096}
"""The largest number of trees, boosting rounds / iterations, and units per hidden layer read from a file."""


@dataclass(frozen=True)
class Recipe:
    """What the model file says about how the target was made.

    Attributes
    ----------
    family : str or None
        The reference family of the target's kind (:data:`audit_core.model.reference.FAMILIES`), None if unknown.
    estimator : str
        The scikit-learn class the reference models of that family use (``HistGradientBoostingClassifier``...).
    params : dict
        Its hyper-parameters (JSON values: tuples as lists).
    source : {"skops", "onnx", "none"}
    notes : tuple of str
        What was capped or could not be read.
    """

    family: str | None
    estimator: str
    params: dict[str, Any] = field(default_factory=dict)
    source: str = "none"
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"family": self.family, "estimator": self.estimator, "params": self.params, "source": self.source,
                "notes": list(self.notes)}  # fmt: skip

    def describe(self) -> str:
        """One line: ``RandomForestClassifier(n_estimators=20, max_depth=None), read from the ONNX graph``."""
        if self.family is None:
            return "the file does not say what kind of model it is"
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.estimator}({args}), read from the {'skops file' if self.source == 'skops' else 'ONNX graph'}"


NO_RECIPE = Recipe(family=None, estimator="")


def _json_value(value: Any) -> Any:
    """A parameter as JSON (tuples as lists), or ``...`` when it is not a plain value."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else ...
    if isinstance(value, tuple | list) and all(isinstance(v, int | np.integer) for v in value):
        return [int(v) for v in value]
    return ...


def _capped(params: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    out = dict(params)
    for key, cap in CAPS.items():
        value = out.get(key)
        if isinstance(value, list) and any(v > cap for v in value):
            out[key] = [min(v, cap) for v in value]
            notes.append(f"{key} capped at {cap:,} per layer (the file says {value})")
        elif isinstance(value, int) and value > cap:
            out[key] = cap
            notes.append(f"{key} capped at {cap:,} (the file says {value:,})")
    return out


def recipe_of_estimator(estimator: Any) -> Recipe:
    """The recipe of a scikit-learn estimator rebuilt from a skops file (the last step of a Pipeline)."""
    final = estimator
    for _ in range(10):  # a Pipeline's last step, possibly itself a Pipeline
        steps = getattr(final, "steps", None)
        if not (isinstance(steps, list) and steps and isinstance(steps[-1], tuple) and len(steps[-1]) == 2):
            break
        final = steps[-1][1]
    name = type(final).__name__
    family = _SKLEARN_FAMILIES.get(name)
    if family is None or type(final).__module__.split(".")[0] != "sklearn":
        return Recipe(family=None, estimator=name, source="skops")
    try:
        raw = final.get_params(deep=False)
    except Exception:  # a rebuilt estimator whose parameters cannot be read: keep the family's defaults
        return Recipe(family=family, estimator=name, source="skops", notes=("its parameters could not be read",))
    params = {k: _json_value(v) for k, v in sorted(raw.items()) if k not in _DROPPED}
    if raw.get("class_weight") == "balanced":
        params["class_weight"] = "balanced"
    notes = [f"{k} left at the family's default (not a plain value)" for k, v in params.items() if v is ...]
    params = {k: v for k, v in params.items() if v is not ...}
    return Recipe(family=family, estimator=name, params=_capped(params, notes), source="skops", notes=tuple(notes))


# -------------------------------------------------------------------------------------------------------- ONNX
def _attributes(node: Any) -> dict[str, Any]:
    from onnx import helper

    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _tree_shape(attrs: dict[str, Any]) -> tuple[int, int, int]:
    """Number of trees, the deepest tree's depth and the most leaves of a tree, from a tree ensemble's node lists."""
    trees = np.asarray(attrs.get("nodes_treeids", []), dtype=np.int64)
    nodes = np.asarray(attrs.get("nodes_nodeids", []), dtype=np.int64)
    modes = np.asarray([m.decode() if isinstance(m, bytes) else str(m) for m in attrs.get("nodes_modes", [])])
    true_ids = np.asarray(attrs.get("nodes_truenodeids", []), dtype=np.int64)
    false_ids = np.asarray(attrs.get("nodes_falsenodeids", []), dtype=np.int64)
    if not trees.size or not (trees.size == nodes.size == modes.size == true_ids.size == false_ids.size):
        return 0, 0, 0
    width = int(max(nodes.max(), true_ids.max(), false_ids.max())) + 1
    key = trees * width + nodes
    order = np.argsort(key, kind="stable")
    sorted_keys, n = key[order], key.size
    branch = modes[order] != "LEAF"
    children = np.full((n, 2), -1, dtype=np.int64)
    rows = np.flatnonzero(branch)
    for side, ids in enumerate((true_ids[order], false_ids[order])):
        wanted = trees[order][rows] * width + ids[rows]
        at = np.minimum(np.searchsorted(sorted_keys, wanted), n - 1)
        children[rows, side] = np.where(sorted_keys[at] == wanted, at, -1)  # node key -> its row in the sorted order
    depth = np.full(key.size, -1, dtype=np.int64)
    is_child = np.zeros(key.size, dtype=bool)
    is_child[children[children >= 0]] = True
    frontier = np.flatnonzero(~is_child)  # the roots
    level = 0
    while frontier.size and level <= 10_000:
        depth[frontier] = level
        nxt = children[frontier].ravel()
        frontier = np.unique(nxt[(nxt >= 0)])
        frontier = frontier[depth[frontier] < 0]  # a malformed graph with a cycle stops here
        level += 1
    leaves = np.bincount(trees[order][~branch], minlength=int(trees.max()) + 1)
    return int(np.unique(trees).size), int(max(depth.max(), 0)), int(leaves.max())


def _forest_is_pure(attrs: dict[str, Any], n_trees: int) -> bool:
    """Every leaf of an averaging forest says one class with certainty (its weights x trees are 0 or 1)."""
    weights = np.asarray(attrs.get("class_weights", []), dtype=np.float64) * n_trees
    return bool(weights.size) and bool(np.all(np.isclose(weights, 0.0, atol=1e-3) | np.isclose(weights, 1.0, atol=1e-3)))


def _dense_layers(graph: Any) -> tuple[list[int], str | None]:
    """Output sizes of the dense layers (MatMul / Gemm with a 2-D weight initializer) and the first activation."""
    from onnx import numpy_helper

    shapes = {t.name: tuple(numpy_helper.to_array(t).shape) for t in graph.initializer if len(t.dims) == 2}
    sizes, activation = [], None
    for node in graph.node:
        if node.op_type in ("MatMul", "Gemm") and len(node.input) >= 2 and node.input[1] in shapes:
            rows, cols = shapes[node.input[1]]
            trans_b = node.op_type == "Gemm" and _attributes(node).get("transB", 0) == 1
            sizes.append(int(rows if trans_b else cols))
        elif activation is None and node.op_type in ("Relu", "Tanh", "Sigmoid"):
            activation = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "logistic"}[node.op_type]
    return sizes, activation


def recipe_of_onnx(model: Any) -> Recipe:
    """The recipe an ONNX graph reveals (module docstring)."""
    notes: list[str] = []
    for node in model.graph.node:
        if node.op_type == "TreeEnsembleClassifier":
            attrs = _attributes(node)
            n_trees, depth, leaves = _tree_shape(attrs)
            if not n_trees:
                return Recipe(family=None, estimator="TreeEnsembleClassifier", source="onnx",
                              notes=("its tree lists could not be read",))  # fmt: skip
            post = attrs.get("post_transform", b"NONE")
            post = post.decode() if isinstance(post, bytes) else str(post)
            if post == "NONE":
                pure = _forest_is_pure(attrs, n_trees)
                params: dict[str, Any] = {"n_estimators": n_trees, "max_depth": None if pure else depth}
                return Recipe(family="random_forest", estimator="RandomForestClassifier", params=_capped(params, notes),
                              source="onnx", notes=tuple(notes))  # fmt: skip
            labels = attrs.get("classlabels_int64s") or attrs.get("classlabels_strings") or []
            rounds = n_trees // len(labels) if len(labels) > 2 else n_trees
            params = {"max_iter": max(rounds, 1), "max_depth": max(depth, 1), "max_leaf_nodes": max(leaves, 2),
                      "early_stopping": False}  # fmt: skip
            return Recipe(family="gbdt", estimator="HistGradientBoostingClassifier", params=_capped(params, notes),
                          source="onnx", notes=(*notes, "the learning rate is not in the graph (the default 0.1)"))  # fmt: skip
        if node.op_type == "LinearClassifier":
            return Recipe(family="logistic", estimator="LogisticRegression", params={"max_iter": 1000}, source="onnx",
                          notes=("the regularisation is not in the graph (the default C = 1)",))  # fmt: skip
    sizes, activation = _dense_layers(model.graph)
    if len(sizes) >= 2 and activation is not None:
        mlp: dict[str, Any] = {"hidden_layer_sizes": sizes[:-1], "activation": activation, "max_iter": 300}
        return Recipe(family="mlp", estimator="MLPClassifier", params=_capped(mlp, notes), source="onnx",
                      notes=(*notes, "the training schedule is not in the graph (the family's 300 iterations)"))  # fmt: skip
    return Recipe(family=None, estimator="", source="onnx")
