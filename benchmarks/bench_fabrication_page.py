"""The Fabricated members page and CLI as a new user meets them: wall time of the default run.

1. The CLI's default run, in a fresh process as a user types it:
   ``python -m audit_core --quiet fabrication --dataset digits --json OUT`` (import, training of
   the target and reference models, every attack, the JSON).
2. The page (views/fabrication.py) driven through streamlit's AppTest with its defaults:
   the first press of "Train, attack and measure" (trains and attacks), the same press in a new
   session (both steps come from the server's result store) and a new epsilon (the trained
   models are kept, only the attacks run).
3. ``--server``: the same page on the real server (``streamlit run app.py``) in headless
   Chromium (/usr/bin/chromium, as tests/browser): the first press on a fresh server, then a
   press in a new browser session (cached), with the progress bar's texts seen meanwhile.
4. The progress messages of the CLI run: each names the running step and, once it can tell,
   the time left.

``--root DIR`` times another checkout (e.g. ``git archive REV | tar -x -C DIR``) with this
script, for a before / after comparison on the same machine.

Usage: python benchmarks/bench_fabrication_page.py [--root DIR] [--skip-page] [--skip-cli] [--server]
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cli_run(root: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fabrication.json"
        argv = [sys.executable, "-m", "audit_core", "fabrication", "--dataset", "digits", "--json", str(out)]
        t = time.perf_counter()
        r = subprocess.run(argv, cwd=root, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
        wall = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.startswith("[")]
    print(f"CLI default run (fresh process): {wall:.1f} s, {len(lines)} progress lines")
    for line in lines[:: max(1, len(lines) // 12)] + lines[-1:]:
        print(f"    {line}")


def page_runs(root: Path) -> None:
    sys.path.insert(0, str(root))
    os.chdir(root)
    from streamlit.testing.v1 import AppTest

    page = str(root / "views" / "fabrication.py")

    def press(change=None) -> float:
        at = AppTest.from_file(page, default_timeout=1800)
        at.run()
        if change is not None:
            change(at)
        t = time.perf_counter()
        at.button[0].click().run()
        wall = time.perf_counter() - t
        if at.exception:
            raise SystemExit(str(at.exception))
        return wall

    first = press()
    cached = press()
    new_eps = press(lambda at: at.slider[0].set_value(48))
    print(f"page, first run: {first:.1f} s; same settings in a new session: {cached:.2f} s; "
          f"epsilon 48/255 on the kept models: {new_eps:.1f} s")


def server_runs(root: Path) -> None:
    from playwright.sync_api import sync_playwright

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
            "127.0.0.1", "--server.headless", "true"]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(root)})  # fmt: skip
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                        args=["--no-sandbox", "--disable-dev-shm-usage"])  # fmt: skip

            def press() -> tuple[float, list[tuple[str, str]]]:
                page = browser.new_page(viewport={"width": 1400, "height": 3000})
                page.goto(f"{url}/fabrication", timeout=120_000)
                button = page.get_by_role("button", name="Train, attack and measure")
                button.wait_for(timeout=120_000)
                page.wait_for_timeout(1500)  # the first script run settles
                seen: list[tuple[str, str]] = []
                t = time.perf_counter()
                button.click()
                done = page.get_by_text("MFD AUC", exact=True).first
                while time.perf_counter() - t < 900:
                    bars = page.locator('[data-testid="stProgress"]')
                    if bars.count():
                        try:
                            text = bars.first.inner_text(timeout=500).strip()
                        except Exception:  # the bar went away while read
                            text = ""
                        item = re.sub(r"(epoch|step) \d+/\d+", "", text.split(" · ")[0])
                        if text and (not seen or item != seen[-1][0]):
                            seen.append((item, text))
                    if done.count() and not bars.count():
                        break
                    page.wait_for_timeout(200)
                wall = time.perf_counter() - t
                page.close()
                return wall, seen

            first, seen = press()
            cached, _ = press()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"real server (streamlit run app.py, headless Chromium): first run {first:.1f} s, "
          f"same settings in a new browser session {cached:.1f} s; progress texts seen in the first run:")
    for _, text in seen:
        print(f"    {text}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="checkout to time (default: this one)")
    ap.add_argument("--skip-page", action="store_true")
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--server", action="store_true", help="also time the page on the real server in Chromium")
    args = ap.parse_args()
    root = args.root.resolve()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{root}: {os.cpu_count()} CPU(s), load average {load:.1f}")
    if not args.skip_cli:
        cli_run(root)
    if args.server:  # before the in-process page runs: those change this process's working directory
        server_runs(root)
    if not args.skip_page:
        page_runs(root)
