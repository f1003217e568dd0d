"""Models as stewards save them (issue 32.3): the usual scikit-learn families load from skops with no flag.

Each family is a Pipeline with a ColumnTransformer (one-hot text, scaled numbers) around the
classifier, saved with ``skops.io.dumps``; loaded with no trusted types it must give the fitted
estimator's own probabilities. A tree whose node indices point outside it (what skops leaves
Tree out of its defaults for: scikit-learn follows them unchecked) is refused in one sentence,
and a type outside the vetted list is still refused, named.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from audit_core.common.errors import InputError
from audit_core.model.loading import load_model
from audit_core.model.skops_types import VETTED_TYPES


def _table(n: int = 240) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"]).assign(kind=rng.choice(["x", "y", "z"], n))
    return frame, (frame["a"] + (frame["kind"] == "x") + rng.normal(scale=0.5, size=n) > 0.3).astype(int).to_numpy()


def _pipeline(classifier):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    encoder = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), ["kind"]),
                                 ("numbers", StandardScaler(), ["a", "b", "c"])])  # fmt: skip
    return make_pipeline(encoder, classifier)


def _classifier(family: str):
    from sklearn.ensemble import GradientBoostingClassifier, HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier

    return {
        "random_forest": RandomForestClassifier(n_estimators=10, random_state=0),
        "gradient_boosting": GradientBoostingClassifier(n_estimators=10, random_state=0),
        "hist_gradient_boosting": HistGradientBoostingClassifier(max_iter=10, random_state=0),
        "logistic": LogisticRegression(),
        "mlp": MLPClassifier(hidden_layer_sizes=(8,), max_iter=30, random_state=0),
    }[family]


@pytest.mark.parametrize("family", ["random_forest", "gradient_boosting", "hist_gradient_boosting", "logistic", "mlp"])
def test_each_usual_family_loads_with_no_flag(family):
    import skops.io as sio

    frame, y = _table()
    pipe = _pipeline(_classifier(family))
    with warnings.catch_warnings(), threadpool_limits(1):  # OpenMP threads only stall on a shared machine
        warnings.simplefilter("ignore")  # the MLP's capped iterations
        pipe.fit(frame, y)
    data = sio.dumps(pipe)
    untrusted = sio.get_untrusted_types(data=data)
    assert set(untrusted) <= set(VETTED_TYPES)  # what the file needs beyond skops' defaults is on the vetted list
    if family != "logistic":
        assert untrusted  # and there is something: without the list, this file needed a flag
    model = load_model(data, f"{family}.skops")  # no trusted types given
    np.testing.assert_array_equal(model.predict_proba(frame, classes=["0", "1"]), pipe.predict_proba(frame))


def _forest_bytes(corrupt) -> bytes:
    import skops.io as sio
    from sklearn.ensemble import RandomForestClassifier

    frame, y = _table()
    forest = RandomForestClassifier(n_estimators=4, random_state=0).fit(frame[["a", "b", "c"]].to_numpy(), y)
    tree = forest.estimators_[2].tree_
    state = tree.__getstate__()
    corrupt(state["nodes"])
    tree.__setstate__(state)  # scikit-learn accepts it; predicting on it would read outside the tree
    return sio.dumps(forest)


def _child_outside(nodes):
    nodes["left_child"][0] = 10**6


def _child_loops(nodes):
    nodes["right_child"][0] = 0  # back to the root: predict would never end


def _feature_outside(nodes):
    nodes["feature"][0] = 7  # the forest takes 3 columns


@pytest.mark.parametrize(("corrupt", "words"), [(_child_outside, "node 0 points to a child outside the tree or before itself"),
                                                (_child_loops, "node 0 points to a child outside the tree or before itself"),
                                                (_feature_outside, "a feature outside its 3 columns")])  # fmt: skip
def test_a_tree_with_indices_outside_it_is_refused_before_use(corrupt, words):
    with pytest.raises(InputError) as err:
        load_model(_forest_bytes(corrupt), "crafted.skops")
    text = str(err.value)
    assert words in text
    assert "crash" in text
    assert "\n" not in text


def test_a_hist_gradient_boosting_tree_pointing_outside_is_refused():
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingClassifier

    frame, y = _table()
    with threadpool_limits(1):
        model = HistGradientBoostingClassifier(max_iter=5, random_state=0).fit(frame[["a", "b", "c"]].to_numpy(), y)
    model._predictors[3][0].nodes["left"][0] = 10**6
    with pytest.raises(InputError, match="HistGradientBoosting tree whose node 0 points to a child outside"):
        load_model(sio.dumps(model), "crafted.skops")


def test_a_type_outside_the_vetted_list_is_still_refused_and_named():
    import skops.io as sio
    from sklearn.neighbors import KNeighborsClassifier

    frame, y = _table()
    data = sio.dumps(KNeighborsClassifier().fit(frame[["a", "b", "c"]].to_numpy(), y))
    with pytest.raises(InputError) as err:
        load_model(data, "knn.skops")
    assert "sklearn.neighbors._kd_tree.KDTree" in str(err.value)
    assert "--trust-skops-types" in str(err.value)
    # trusted by name, it loads (the steward made it)
    model = load_model(data, "knn.skops", trusted=sio.get_untrusted_types(data=data))
    assert model.predict_proba(frame[["a", "b", "c"]], classes=["0", "1"]).shape == (len(frame), 2)
