"""Real-browser tests: the running dashboard in headless Chromium, every page, sample runs.

Starts ``streamlit run app.py`` on a free local port (the Dockerfile's entry command),
opens each page from the home page's "Run on the sample" buttons, waits for the
charts, and fails on any exception box or empty chart. Screenshots go to
``artifacts/screenshots/`` (the folder the README names). Needs Debian's Chromium at
/usr/bin/chromium (``make browser`` installs it); without it these tests are skipped
locally and fail in CI.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from audit_core.common.decision import KINDS
from audit_core.common.report import CHROMIUM_FLAGS

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI needs Chromium for the browser tests: apt-get install chromium")
    pytest.skip("Chromium is not installed (make browser)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    log = (ROOT / "artifacts").joinpath("streamlit.log")
    log.parent.mkdir(exist_ok=True)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address", "127.0.0.1"],
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.5)
        else:
            proc.terminate()
            pytest.fail(f"The dashboard did not start; see {log}")
        yield url
        proc.terminate()
        proc.wait(timeout=20)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS))
        yield b
        b.close()


BUSY = ("stStatusWidget", "stSkeleton", "stProgress", "stSpinner")


def _busy(page) -> bool:
    return any(page.locator(f'[data-testid="{t}"]').count() for t in BUSY)


def _wait_idle(page, timeout_s: float) -> None:
    """Wait until Streamlit has finished the run: no status widget, progress bar, spinner or skeleton for 1 s."""
    deadline, quiet_since = time.time() + timeout_s, None
    while time.time() < deadline:
        if _busy(page):
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.time()
        elif time.time() - quiet_since >= 1.0:
            return
        page.wait_for_timeout(100)
    raise AssertionError(f"The page was still running after {timeout_s:.0f} s")


RESULT_MARKER = "Reproduce this from the command line"
"""Every result ends with this expander (ui.downloads): once it is on the page, the run has finished rendering."""


def _wait_result(page, timeout_s: float) -> None:
    """Wait for the result's marker, then for every plotly chart to have drawn its SVG."""
    page.get_by_text(RESULT_MARKER).first.wait_for(timeout=timeout_s * 1000)
    _wait_idle(page, 30)
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')]"
                           ".every(p => p.querySelector('.main-svg'))", timeout=30_000)  # fmt: skip


def _assert_healthy(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    exceptions = page.locator('[data-testid="stException"]')
    assert exceptions.count() == 0, f"{name}: exception shown: {exceptions.first.inner_text()[:500]}"
    charts = page.locator(".js-plotly-plot")
    for i in range(charts.count()):
        traces = charts.nth(i).locator(".trace, .scatterlayer path, .barlayer path, .heatmaplayer image")
        assert traces.count() > 0, f"{name}: chart {i} is empty"


def test_deep_link_on_a_fresh_server_goes_through_the_router(server, browser):
    # A deep link on a fresh server must go through the router (views/ is no old-style pages/ folder).
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server}/lira_calibration")
    page.get_by_role("heading", name="Calibrated LiRA").first.wait_for(timeout=60_000)
    nav = page.locator('[data-testid="stSidebarNav"]')
    nav.get_by_text("Generate & compare").wait_for(timeout=30_000)  # the router's titles, not file names
    assert nav.get_by_text("lira calibration", exact=True).count() == 0
    page.close()


def test_home_page_lists_every_audit(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 5000})
    page.goto(server)
    page.get_by_role("button", name="Run on the sample").first.wait_for(timeout=60_000)
    _wait_idle(page, 30)
    from audit_core.registry import REGISTRY

    assert page.get_by_role("button", name="Run on the sample").count() == len(REGISTRY)
    _assert_healthy(page, "home")
    page.close()


SAMPLE_RUN_SECONDS = {"tabular": 240, "compare": 420, "lira": 300, "model": 240, "dp-audit": 240,
                      "fabrication": 300, "scores": 120}  # fmt: skip


@pytest.mark.parametrize("audit", list(SAMPLE_RUN_SECONDS))
def test_sample_run_draws_charts(server, browser, audit):
    """Every page's "Run on the sample" (home page) ends in its result: a decision, charts drawn, no exception."""
    from audit_core.registry import REGISTRY

    index = list(REGISTRY).index(audit)
    page = browser.new_page(viewport={"width": 1400, "height": 5000})
    page.goto(server)
    page.get_by_role("button", name="Run on the sample").nth(index).wait_for(timeout=60_000)
    _wait_idle(page, 30)
    page.get_by_role("button", name="Run on the sample").nth(index).click()
    _wait_result(page, SAMPLE_RUN_SECONDS[audit])
    first = page.evaluate(_FIRST_AFTER_RESULT)
    assert first is not None, f"{audit}: no 'Result' heading"
    assert first["testid"] == "stAlert", f"{audit}: the result begins with {first}, not the decision box"
    assert re.search(rf"({'|'.join(KINDS.values())}): ", first["text"][:80]), f"{audit}: {first['text'][:200]}"
    assert page.locator(".js-plotly-plot").count() >= 1, f"{audit}: no chart drawn"
    if audit == "tabular":
        _assert_one_count_per_finding(page)
    _assert_healthy(page, REGISTRY[audit].page.removeprefix("views/").removesuffix(".py"))
    page.close()


_FIRST_AFTER_RESULT = """() => {
  const sel = '[data-testid="stHeading"], [data-testid="stAlert"], [data-testid="stMetric"], [data-testid="stDataFrame"], '
            + '[data-testid="stExpander"], [data-testid="stCaptionContainer"], .js-plotly-plot';
  const els = [...document.querySelectorAll(sel)];
  const i = els.findIndex(e => e.matches('[data-testid="stHeading"]') && e.innerText.trim().startsWith('Result'));
  if (i < 0 || i + 1 >= els.length) return null;
  return {testid: els[i + 1].getAttribute('data-testid'), text: els[i + 1].innerText.trim()};
}"""
"""The first element after the result's heading: its kind and text (the decision box must come before any card)."""


def _assert_one_count_per_finding(page) -> None:
    """The copies the decision names are the card's count and the distance chart's, under the same name."""
    box = page.locator('[data-testid="stAlert"]').first.inner_text()
    found = re.search(r"([\d,]+) of the [\d,]+ training rows \([\d.]+ %\) appear verbatim", box)
    assert found, box[:300]
    n = found.group(1)
    card = page.locator('[data-testid="stMetric"]').filter(has_text="training rows copied verbatim").first
    assert card.locator('[data-testid="stMetricValue"]').inner_text().strip() == n
    assert page.locator(".js-plotly-plot").filter(has_text=f"{n} copied verbatim").count() == 1  # the distance chart


def _choose_upload_mode(page, server: str) -> None:
    page.goto(f"{server}/synthetic_risk")
    page.get_by_text("Data", exact=True).first.wait_for(timeout=60_000)
    _wait_idle(page, 30)
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name="Upload my own tables").click()
    _wait_idle(page, 30)


def test_uploaded_tables_are_audited(server, browser):
    """The upload path (AppTest cannot drive file uploaders): own tables in, charts out."""
    page = browser.new_page(viewport={"width": 1400, "height": 5000})
    _choose_upload_mode(page, server)
    inputs = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
    folder = ROOT / "sample_data" / "german_credit"
    for i, name in enumerate(["train", "holdout", "synthetic_leaky"]):
        inputs.nth(i).set_input_files(str(folder / f"{name}.csv"))
        _wait_idle(page, 30)
    page.get_by_role("button", name="Run the audit").click()
    _wait_result(page, 240)
    assert page.get_by_text("UNSAFE").count() >= 1  # 10 % of the synthetic rows are training copies
    _assert_healthy(page, "synthetic_risk_upload")
    page.close()


def _binary_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"age": [1, 2], "city": pa.array([b"\x00\xff", b"\xfe"])}), path)


@pytest.mark.parametrize(
    ("file_name", "write", "words"),
    [
        ("train.csv", lambda p: p.write_bytes("age,city\n1,Zürich\n".encode("latin-1")), "UTF-8"),
        ("train.parquet", _binary_parquet, "binary data that is not text"),
        ("train.csv", lambda p: p.write_text("age;city\n1;a\n2,b\n"), "does not match the header"),
    ],
)
def test_bad_upload_is_one_sentence(server, browser, tmp_path, file_name, write, words):
    bad = tmp_path / file_name
    write(bad)
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    _choose_upload_mode(page, server)
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(bad))
    _wait_idle(page, 30)
    error = page.locator('[data-testid="stAlertContentError"]')
    error.first.wait_for(timeout=30_000)
    text = error.first.inner_text()
    assert words in text
    assert "site-packages" not in text
    assert str(ROOT) not in text  # no server paths
    assert page.locator('[data-testid="stException"]').count() == 0
    page.close()


def test_renamed_npy_upload_on_fabrication_is_one_sentence(server, browser, tmp_path):
    import numpy as np

    bad = tmp_path / "images.npz"
    with bad.open("wb") as handle:
        np.save(handle, np.zeros((40, 8, 8), dtype=np.float32))
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.goto(f"{server}/fabrication")
    page.get_by_text("Upload images (.npz) and a model").first.wait_for(timeout=60_000)
    _wait_idle(page, 30)
    page.get_by_text("Upload images (.npz) and a model").first.click()
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files(str(bad))
    _wait_idle(page, 30)
    page.get_by_role("button", name="Train, attack and measure").click()
    _wait_idle(page, 60)
    error = page.locator('[data-testid="stAlertContentError"]')
    error.first.wait_for(timeout=30_000)
    assert "single .npy array" in error.first.inner_text()
    assert page.locator('[data-testid="stException"]').count() == 0
    page.screenshot(path=str(SHOTS / "fabrication_bad_upload.png"))
    page.close()


def test_uploaded_table_trains_lira(server, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 5000})
    page.goto(f"{server}/lira_calibration")
    page.get_by_text("Upload a table").first.wait_for(timeout=60_000)
    _wait_idle(page, 30)
    page.get_by_text("Upload a table").first.click()
    _wait_idle(page, 30)
    upload = page.locator('[data-testid="stFileUploaderDropzoneInput"]').first
    upload.set_input_files(str(ROOT / "sample_data" / "german_credit.csv"))
    page.get_by_role("button", name="Train the models").wait_for(timeout=30_000)
    _wait_idle(page, 30)
    page.get_by_role("button", name="Train the models").click()  # target: the last column, credit
    _wait_result(page, 240)
    _assert_healthy(page, "lira_calibration_upload")
    page.close()
