"""One hostile upload on every page (issue 33), in the real dashboard in headless Chromium.

Each page gets a file of the attacker probe (``tests/hostile_inputs.py``: generated here, never
committed) through its own uploader, and must answer with one sentence in an error box, never an
exception box: the synthetic page a Parquet dictionary bomb, the comparison page an unterminated
CSV quote, LiRA a table with +-inf, the model page a ``torch.save`` pickle renamed ``.onnx``, the DP
claim page a canary listed twice, the fabrication page an .npz zip bomb, the score check a file
whose column names are markdown, HTML and ``$...$`` math (shown as text: no link, image or formula
of the upload's choosing). Needs /usr/bin/chromium, as ``test_dashboard.py`` does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# the dashboard's server, Chromium and the idle wait are test_dashboard's (its module-level check skips or fails
# without Chromium, as for every browser test); its fixtures get their own instance in this module
from tests.browser.test_dashboard import SHOTS, _wait_idle, browser, server  # noqa: F401 - the fixtures

pytestmark = pytest.mark.browser


def _idle(page, timeout_s: float = 60) -> None:
    _wait_idle(page, timeout_s)


def _open(browser, server: str, path: str, mode: str):
    """The page at ``path`` with its upload option ``mode`` chosen (a radio's label, or the synthetic page's select)."""
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.goto(f"{server}/{path}")
    if path == "synthetic_risk":
        page.get_by_text("Data", exact=True).first.wait_for(timeout=60_000)
        _idle(page)
        page.locator('[data-testid="stSelectbox"]').first.click()
        page.get_by_role("option", name=mode).click()
    else:
        page.get_by_text(mode).first.wait_for(timeout=60_000)
        _idle(page)
        page.get_by_text(mode).first.click()
    _idle(page)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.wait_for(state="attached", timeout=60_000)
    return page


def _upload(page, *files: Path) -> None:
    inputs = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    for i, f in enumerate(files):
        inputs.nth(i).set_input_files(str(f))
        _idle(page)


def _submit(page, label: str) -> None:
    button = page.get_by_role("button", name=label)
    button.wait_for(timeout=60_000)
    _idle(page)
    button.click()
    page.wait_for_timeout(500)
    _idle(page, 120)


def _one_sentence(page, name: str, words: str) -> str:
    """The page's error box says ``words`` in one line, and there is no exception box; its text."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    error = page.locator('[data-testid="stAlertContentError"]')
    error.first.wait_for(timeout=60_000)
    page.screenshot(path=str(SHOTS / f"hostile_{name}.png"), full_page=True)
    text = error.first.inner_text().replace("\u2060", "")  # the word joiner that keeps a quoted URL from being a link
    assert words in text, text
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "Traceback" not in text
    assert "site-packages" not in text
    return text


def test_synthetic_page_parquet_dictionary_bomb(server, browser, tmp_path):
    from tests.hostile_inputs import parquet_dictionary_bomb

    bomb = tmp_path / "train.parquet"
    bomb.write_bytes(parquet_dictionary_bomb())
    page = _open(browser, server, "synthetic_risk", "Upload my own tables")
    _upload(page, bomb)
    _one_sentence(page, "synthetic", "has a cell of 1,000,000 characters in column 'city'")
    page.close()


def test_comparison_page_unterminated_quote(server, browser, tmp_path):
    from tests.hostile_inputs import good_frame

    lines = good_frame(200).to_csv(index=False).splitlines()
    lines[5] = '"' + lines[5]
    bad = tmp_path / "real.csv"
    bad.write_text("\n".join(lines) + "\n")
    page = _open(browser, server, "generators", "Upload my own table")
    _upload(page, bad)
    text = _one_sentence(page, "generators", "does not match the header")
    assert "\n" not in text.split("🚫")[-1].strip()  # the quoted rows' line breaks are shown as \n
    page.close()


def test_lira_page_infinite_feature(server, browser, tmp_path):
    from tests.hostile_inputs import good_frame

    frame = good_frame(200, seed=5).assign(y=lambda d: (d["age"] > 50).astype(int)).astype({"hours": float})
    frame.loc[3, "hours"] = np.inf
    bad = tmp_path / "table.csv"
    frame.to_csv(bad, index=False)
    page = _open(browser, server, "lira_calibration", "Upload a table")
    _upload(page, bad)
    _submit(page, "Train the models and evaluate")
    _one_sentence(page, "lira", "holds infinite values (1, first at row 3)")
    page.close()


def test_model_page_torch_save_renamed_onnx(server, browser, tmp_path):
    from tests.hostile_inputs import torch_zip_payload
    from tests.model_files import numeric_tables

    model = tmp_path / "model.onnx"
    model.write_bytes(torch_zip_payload(tmp_path))
    tables = numeric_tables(tmp_path)
    page = _open(browser, server, "own_model", "Upload my model and tables")
    _upload(page, model, tables["train"], tables["population"])
    _submit(page, "Audit the model")
    _one_sentence(page, "own_model", "is a torch.save archive (a pickle inside a zip)")
    assert not (tmp_path / "PWNED").exists()
    page.close()


def test_dp_claim_page_duplicated_canary(server, browser, tmp_path):
    from tests.hostile_inputs import canary_table
    from tests.model_files import two_class_onnx

    model = tmp_path / "model.onnx"
    model.write_bytes(two_class_onnx())
    canaries = canary_table()
    canaries.iloc[7] = canaries.iloc[3]
    path = tmp_path / "canaries.csv"
    canaries.to_csv(path, index=False)
    page = _open(browser, server, "dp_claim", "Audit an uploaded model with its canary file")
    _upload(page, model, path)
    _submit(page, "Audit the claim on the uploaded model")
    _one_sentence(page, "dp_claim", "lists the same canary more than once (2 rows, first rows 3 and 7")
    page.close()


def test_fabrication_page_npz_zip_bomb(server, browser, tmp_path):
    from tests.hostile_inputs import zip_bomb_npz

    bomb = tmp_path / "images.npz"
    bomb.write_bytes(zip_bomb_npz(2.0))
    page = _open(browser, server, "fabrication", "Upload images (.npz) and a model")
    _upload(page, bomb)
    _submit(page, "Train, attack and measure")
    _one_sentence(page, "fabrication", "pixel values; at most 160,000,000")
    page.close()


def test_score_check_page_markdown_column_names_stay_text(server, browser, tmp_path):
    names = ["[click me](https://example.com)", "![x](https://example.com/x.png)", "$x^2$", "<b>bold</b>"]
    bad = tmp_path / "scores.csv"
    pd.DataFrame({name: [0.1, 0.2] for name in names}).to_csv(bad, index=False)
    page = _open(browser, server, "score_check", "Upload my scores")
    _upload(page, bad)
    _submit(page, "Check the scores")
    text = _one_sentence(page, "score_check", "[click me](https://example.com)")
    box = page.locator('[data-testid="stAlertContentError"]').first
    assert box.locator("a, img, .katex, b").count() == 0  # nothing of the upload's is rendered
    assert "$x^2$" in text
    assert "<b>bold</b>" in text
    page.close()
