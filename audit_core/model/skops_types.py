"""The scikit-learn types a skops file may hold beyond skops' defaults, and the checks that make them safe to use.

skops rebuilds an estimator from a JSON schema and arrays, never by unpickling; it refuses any
type outside its trusted set unless the caller names it. Its default set leaves out the types
that the usual models of a steward need (issue 32.3), for two different reasons:

- **tree node storage** (``sklearn.tree._tree.Tree`` in decision trees, forests, extra trees
  and gradient boosting; ``TreePredictor`` in HistGradientBoosting). Rebuilding one runs no
  code from the file, but its ``nodes`` array holds child and feature indices that
  scikit-learn's compiled ``predict`` follows *without bounds checks*: a crafted file could
  crash the server or read memory outside the tree. So these are trusted only together with
  :func:`check_vetted`, which checks every node of every tree before the model is used: each
  internal node's children come after it and inside the tree (so every walk ends at a leaf),
  its feature is a column the model is given, a categorical split's bitset exists, and an
  ensemble hands its trees no wider input than they were built for;
- **plain state** that no prediction uses (an MLP's optimiser state, a dtype, the scoring
  function a feature selector was fitted with, the ``check_array`` a HistGradientBoosting model
  with categorical columns validates its numbers with): rebuilding them runs no code and
  nothing calls them on a prediction except ``check_array``, a pure validation function.

Anything else outside skops' defaults is still refused, with the types named
(:func:`audit_core.model.loading.load_model`), unless the steward trusts it by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from audit_core.common.errors import InputError

__all__ = ["VETTED_TYPES", "check_vetted"]

VETTED_TYPES: dict[str, str] = {
    "sklearn.tree._tree.Tree": "the node storage of decision trees, forests, extra trees and gradient boosting "
    "(every node checked before use)",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor": "the trees of HistGradientBoosting (every "
    "node checked before use)",
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer": "an MLP's optimiser state (arrays; used only by "
    "further training)",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer": "an MLP's optimiser state (arrays; used only by "
    "further training)",
    "numpy.dtype": "a data type (an encoder's or imputer's output type)",
    "functools.partial": "a function with some arguments fixed; the function itself must be trusted too",
    "sklearn.utils.validation.check_array": "scikit-learn's input validation (HistGradientBoosting with categorical "
    "columns)",
    "sklearn.feature_selection._univariate_selection.f_classif": "the score function a feature selector was fitted "
    "with (not called on prediction)",
    "sklearn.feature_selection._univariate_selection.chi2": "the score function a feature selector was fitted with "
    "(not called on prediction)",
}
"""Type name -> why it is safe to rebuild (skops' own names, as ``skops.io.get_untrusted_types`` lists them)."""

_LEAF = -1
_MAX_DEPTH = 200
"""Deepest object nesting walked (an estimator inside a pipeline inside a search is a few levels)."""


def _refuse(name: str, what: str) -> InputError:
    return InputError(
        f"Model '{name}' holds {what}, so it is not used: scikit-learn follows these indices without checking them, and a "
        "crafted file could crash the server; save the fitted model again with skops."
    )


def _first(bad: np.ndarray) -> str:
    return f"{int(np.flatnonzero(bad)[0]):,}"


def _check_tree(tree: Any, width: int | None, name: str) -> None:
    """A ``sklearn.tree._tree.Tree``: children after their parent and inside the tree, features below ``width``."""
    n, capacity, n_features = int(tree.node_count), int(tree.capacity), int(tree.n_features)
    if not 1 <= n <= capacity:  # read nothing past the storage: the arrays below are views of node_count nodes
        raise _refuse(name, f"a decision tree that claims {n:,} nodes in storage for {capacity:,}")
    if width is not None and n_features != width:
        raise _refuse(name, f"a decision tree built for {n_features:,} features inside a model given {width:,}")
    left, right, feature = tree.children_left, tree.children_right, tree.feature
    leaf = left == _LEAF
    index = np.arange(n)
    inner = ~leaf
    bad = (leaf & (right != _LEAF)) | (inner & ((left <= index) | (left >= n) | (right <= index) | (right >= n)))
    if bad.any():
        raise _refuse(name, f"a decision tree whose node {_first(bad)} points to a child outside the tree or before itself")
    if inner.any() and (feature[inner].min() < 0 or feature[inner].max() >= n_features):
        raise _refuse(name, f"a decision tree that splits on a feature outside its {n_features:,} columns")


def _check_predictor(predictor: Any, owner: Any, name: str) -> None:
    """A HistGradientBoosting ``TreePredictor`` inside ``owner``: the same, plus categorical bitsets and categories."""
    from sklearn.ensemble._hist_gradient_boosting.common import PREDICTOR_RECORD_DTYPE

    nodes = getattr(predictor, "nodes", None)
    if not isinstance(nodes, np.ndarray) or nodes.dtype != PREDICTOR_RECORD_DTYPE or nodes.ndim != 1 or not nodes.size:
        raise _refuse(name, "a HistGradientBoosting tree whose node array is not scikit-learn's")
    width = getattr(owner, "n_features_in_", None)
    if not isinstance(width, int | np.integer):
        raise _refuse(name, "a HistGradientBoosting tree outside a fitted HistGradientBoosting model")
    n = nodes.size
    index = np.arange(n)
    inner = nodes["is_leaf"] == 0
    left, right = nodes["left"].astype(np.int64), nodes["right"].astype(np.int64)
    bad = inner & ((left <= index) | (left >= n) | (right <= index) | (right >= n))
    if bad.any():
        raise _refuse(name, f"a HistGradientBoosting tree whose node {_first(bad)} points to a child outside the tree or "
                      "before itself")  # fmt: skip
    feature = nodes["feature_idx"]
    if inner.any() and (feature[inner].min() < 0 or feature[inner].max() >= int(width)):
        raise _refuse(name, f"a HistGradientBoosting tree that splits on a feature outside its {int(width):,} columns")
    categorical = inner & (nodes["is_categorical"] != 0)
    if categorical.any():
        is_cat = getattr(getattr(owner, "_bin_mapper", None), "is_categorical_", None)
        bitsets = [getattr(predictor, k, None) for k in ("raw_left_cat_bitsets", "binned_left_cat_bitsets")]
        tables = [b for b in bitsets if isinstance(b, np.ndarray) and b.ndim == 2 and b.shape[1] == 8 and b.dtype == np.uint32]
        if not (isinstance(is_cat, np.ndarray) and is_cat.shape == (int(width),) and len(tables) == 2) or not (
            is_cat[feature[categorical]].all() and nodes["bitset_idx"][categorical].max() < min(b.shape[0] for b in tables)
        ):  # fmt: skip
            raise _refuse(name, "a HistGradientBoosting tree whose categorical split has no matching category table")


def _columns(selection: Any, n: int, names: Any) -> np.ndarray | None:
    """The column indices a ColumnTransformer entry selects (bool mask, indices, slice or names); None if unreadable."""
    try:
        if isinstance(selection, slice):
            return np.arange(n)[selection]
        values = np.asarray(selection)
        if values.dtype == bool:
            return np.flatnonzero(values) if values.shape == (n,) else None
        if values.dtype.kind in "iu":
            return values.astype(np.int64).ravel()
        if names is not None and values.dtype.kind in "UO":
            lookup = {str(c): i for i, c in enumerate(names)}
            return np.array([lookup[str(v)] for v in values.ravel()], dtype=np.int64)
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return None


def _check_hgb_preprocessor(model: Any, name: str) -> None:
    """HistGradientBoosting's own encoder must give its trees as many columns as it takes (one per input column)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import FunctionTransformer, OrdinalEncoder

    pre = getattr(model, "_preprocessor", None)
    if pre is None:
        return
    width = int(model.n_features_in_)
    if not isinstance(pre, ColumnTransformer) or not isinstance(getattr(pre, "transformers_", None), list):
        raise _refuse(name, "a HistGradientBoosting model whose category encoder is not scikit-learn's")
    taken = []
    for entry in pre.transformers_:
        if not (isinstance(entry, tuple) and len(entry) == 3):
            raise _refuse(name, "a HistGradientBoosting model whose category encoder is not scikit-learn's")
        _, step, selection = entry
        cols = _columns(selection, width, getattr(pre, "feature_names_in_", None))
        one_to_one = step == "passthrough" or isinstance(step, OrdinalEncoder) or (
            isinstance(step, FunctionTransformer) and _is_check_array(step.func)
        )  # fmt: skip
        if cols is None or not (one_to_one or (step == "drop" and cols.size == 0)):
            raise _refuse(name, "a HistGradientBoosting model whose category encoder is not scikit-learn's")
        if step != "drop":
            taken.append(cols)
    if not np.array_equal(np.sort(np.concatenate(taken or [np.zeros(0, np.int64)])), np.arange(width)):
        raise _refuse(name, f"a HistGradientBoosting model whose encoder does not give its trees all {width:,} columns")


def _is_check_array(func: Any) -> bool:
    import functools

    from sklearn.utils.validation import check_array

    return func is check_array or (isinstance(func, functools.partial) and func.func is check_array and not func.args)


def check_vetted(estimator: Any, name: str) -> None:
    """Check every tree an estimator holds (module docstring); one sentence (:class:`InputError`) for the first bad one.

    Walks the rebuilt object (pipelines, column transformers, ensembles, nested lists and object
    arrays). A decision tree's ``tree_`` must be as wide as the tree says it takes; a tree in an
    ensemble's ``estimators_`` no wider than the ensemble's input (forests and gradient boosting
    hand their trees the ensemble's validated input unchecked); a HistGradientBoosting model's
    trees and encoder are checked against its own input width.
    """
    from sklearn.ensemble import BaseEnsemble
    from sklearn.ensemble._hist_gradient_boosting.gradient_boosting import BaseHistGradientBoosting
    from sklearn.ensemble._hist_gradient_boosting.predictor import TreePredictor
    from sklearn.tree import BaseDecisionTree
    from sklearn.tree._tree import Tree

    seen: set[int] = set()

    def walk(obj: Any, ensemble_width: int | None, hgb: Any, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise InputError(f"Model '{name}' nests objects more than {_MAX_DEPTH} levels deep; it is not used.")
        if obj is None or isinstance(obj, str | bytes | int | float | bool | np.generic) or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, Tree):
            _check_tree(obj, None, name)
            return
        if isinstance(obj, TreePredictor):
            _check_predictor(obj, hgb, name)
            return
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                for item in obj.ravel():
                    walk(item, ensemble_width, hgb, depth + 1)
            return
        if isinstance(obj, list | tuple | set | frozenset):
            for item in obj:
                walk(item, ensemble_width, hgb, depth + 1)
            return
        if isinstance(obj, dict):
            for item in obj.values():
                walk(item, ensemble_width, hgb, depth + 1)
            return
        if isinstance(obj, BaseDecisionTree) and isinstance(getattr(obj, "tree_", None), Tree):
            width = getattr(obj, "n_features_in_", None)
            if not isinstance(width, int | np.integer):
                raise _refuse(name, "a decision tree that does not say how many features it takes")
            width = int(width)
            if ensemble_width is not None and width > ensemble_width:
                raise _refuse(name, f"a decision tree built for {width:,} features inside an ensemble given "
                              f"{ensemble_width:,}")  # fmt: skip
            seen.add(id(obj.tree_))
            _check_tree(obj.tree_, width, name)
        if isinstance(obj, BaseHistGradientBoosting):
            _check_hgb_preprocessor(obj, name)
            hgb = obj
        attributes = getattr(obj, "__dict__", None)
        if not isinstance(attributes, dict):
            return
        own_width = getattr(obj, "n_features_in_", None)
        for key, value in attributes.items():
            inner_width = None
            if key == "estimators_" and isinstance(obj, BaseEnsemble) and isinstance(own_width, int | np.integer):
                inner_width = int(own_width)
            walk(value, inner_width, hgb if key == "_predictors" else None, depth + 1)

    walk(estimator, None, None, 0)
