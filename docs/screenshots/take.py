"""Screenshots of every page's sample run in one browser session, each report's PDF pages as PNG, the home page after.

Usage (from the project folder, with Debian's Chromium and pdftoppm installed)::

    .venv/bin/python docs/screenshots/take.py OUT_DIR PREFIX [audit ...]

Starts ``streamlit run app.py`` on a free port, presses each audit's "Run on the sample" on the home page,
waits for the result, screenshots the whole page (the viewport grown to the page's height), downloads the PDF
report and renders its pages with ``pdftoppm``. The committed ``before_*`` / ``after_*`` images (issue 30) are
these, downscaled.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from audit_core.common.report import CHROMIUM_FLAGS  # noqa: E402
from audit_core.registry import REGISTRY  # noqa: E402

BUSY = ("stStatusWidget", "stSkeleton", "stProgress", "stSpinner")
SECONDS = {"tabular": 300, "compare": 600, "lira": 400, "model": 300, "dp-audit": 400, "fabrication": 400, "scores": 200}
HEIGHT = ("() => Math.max(...[...document.querySelectorAll('[data-testid=stMain], [data-testid=stAppViewContainer]')]"
          ".map(e => e.scrollHeight), document.body.scrollHeight)")  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_idle(page, timeout_s: float) -> None:
    deadline, quiet = time.time() + timeout_s, None
    while time.time() < deadline:
        if any(page.locator(f'[data-testid="{b}"]').count() for b in BUSY):
            quiet = None
        elif quiet is None:
            quiet = time.time()
        elif time.time() - quiet >= 1.5:
            return
        page.wait_for_timeout(200)


def _shot(page, path: Path) -> None:
    page.set_viewport_size({"width": 1400, "height": min(int(page.evaluate(HEIGHT)) + 50, 30_000)})
    page.wait_for_timeout(1500)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size({"width": 1400, "height": 1000})


def main(out: Path, prefix: str, only: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log = (out / f"{prefix}streamlit.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                               "--server.address", "127.0.0.1", "--server.headless", "true"], cwd=ROOT, stdout=log,
                              stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=list(CHROMIUM_FLAGS))
            page = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True).new_page()
            page.goto(url)
            page.get_by_role("button", name="Run on the sample").first.wait_for(timeout=90_000)
            _wait_idle(page, 30)
            _shot(page, out / f"{prefix}home.png")
            for i, name in enumerate(REGISTRY):
                if only and name not in only:
                    continue
                slug = str(REGISTRY[name].page).removeprefix("views/").removesuffix(".py")
                started = time.time()
                page.locator('[data-testid="stSidebarNav"]').get_by_text("Home").first.click()
                page.get_by_role("button", name="Run on the sample").nth(i).wait_for(timeout=60_000)
                _wait_idle(page, 30)
                page.get_by_role("button", name="Run on the sample").nth(i).click()
                page.get_by_text("Reproduce this from the command line").first.wait_for(timeout=SECONDS[name] * 1000)
                _wait_idle(page, 60)
                _shot(page, out / f"{prefix}{slug}.png")
                print(f"{name}: {time.time() - started:.0f} s", flush=True)
                with page.expect_download(timeout=180_000) as download:
                    page.get_by_role("button", name="PDF report").first.click()
                pdf = out / f"{prefix}{slug}.pdf"
                download.value.save_as(str(pdf))
                subprocess.run(["pdftoppm", "-r", "60", "-png", str(pdf), str(out / f"{prefix}{slug}_pdf")], check=True)
            page.locator('[data-testid="stSidebarNav"]').get_by_text("Home").first.click()
            _wait_idle(page, 30)
            _shot(page, out / f"{prefix}home_after_runs.png")
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
