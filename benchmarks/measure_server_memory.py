"""Server memory after sessions with large uploads end (issue 10): figures, not timings.

Starts the real dashboard (``streamlit run app.py``, headless, on a free localhost port)
and drives ``--sessions`` browser sessions one after the other (headless Chromium via
playwright, the browser tests' offline flags). Each session opens the synthetic-data
page, uploads a ``--rows``-row training table and a ``--rows``-row synthetic table
(Adult-shaped: the bundled Adult training sample resampled with age and hours jittered)
with the bundled 2,000-row holdout, runs the audit, waits for the result and closes.

Prints the server's resident memory (RSS of the server process, from /proc via psutil):
idle (after one page load, every module imported), after each audit, after each
session closed, the peak while the sessions ran, and then every 15 s while Streamlit
keeps the closed sessions (``server.disconnectedSessionTTL``, 120 s) and the result
store's sweep (``ui.store.SWEEP_SECONDS``) drops what they left. Target (issue 10):
after ten 1M-row audits in closed sessions the server stays under 1 GB above idle.

Usage: python benchmarks/measure_server_memory.py [--rows 1000000] [--sessions 10] [--linger 180]
       [--timeout 1200] [--tables /tmp/memtables]   (--tables: write the CSVs once, reuse them)
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from audit_core.common.report import CHROMIUM_FLAGS  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BUSY = ("stStatusWidget", "stSkeleton", "stProgress", "stSpinner")
MB = 2**20


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tables(folder: Path, rows: int, seed: int = 0) -> dict[str, Path]:
    """Training and synthetic tables of ``rows`` rows, resampled from the Adult sample with jitter.

    Files already in ``folder`` (same rows and seed) are reused, so ``--tables DIR`` writes them once.
    """
    base = pd.read_csv(ROOT / "sample_data" / "adult" / "train.csv")
    rng = np.random.default_rng(seed)
    paths = {"holdout": ROOT / "sample_data" / "adult" / "holdout.csv"}
    for role in ("train", "synthetic"):
        df = base.iloc[rng.integers(0, len(base), rows)].reset_index(drop=True)
        df["age"] = np.clip(df["age"] + rng.integers(-3, 4, rows), 17, 90)
        df["hours_per_week"] = np.clip(df["hours_per_week"] + rng.integers(-5, 6, rows), 1, 99)
        paths[role] = folder / f"{role}_{rows}_seed{seed}.csv"
        if not paths[role].is_file():
            df.to_csv(paths[role].with_suffix(".part"), index=False)
            paths[role].with_suffix(".part").rename(paths[role])
    return paths


class Server:
    """``streamlit run app.py`` on a free port; ``rss()`` reads its resident memory."""

    def __init__(self, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._log = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--server.headless", "true"],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
        )
        self.ps = psutil.Process(self.proc.pid)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise SystemExit(f"the dashboard did not start; see {log}")

    def rss(self) -> float:
        return self.ps.memory_info().rss / MB

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)
        self._log.close()


class Peak(threading.Thread):
    """Samples the server's RSS every half second; ``peak`` is the largest seen."""

    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.server, self.peak, self.running = server, 0.0, True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, self.server.rss())
            time.sleep(0.5)


def _wait_idle(page, timeout_s: float) -> None:
    page.wait_for_timeout(2500)
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if not any(page.locator(f'[data-testid="{t}"]').count() for t in BUSY):
            page.wait_for_timeout(1000)
            if not any(page.locator(f'[data-testid="{t}"]').count() for t in BUSY):
                return
        page.wait_for_timeout(500)
    raise SystemExit(f"the page was still running after {timeout_s:.0f} s")


def _open_upload_page(page, url: str) -> None:
    page.goto(f"{url}/synthetic_risk")
    page.get_by_text("Data", exact=True).first.wait_for(timeout=120_000)
    _wait_idle(page, 120)
    page.locator('[data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name="Upload my own tables").click()
    _wait_idle(page, 60)


def _step(t0: float, server: Server, what: str) -> None:
    print(f"    {time.perf_counter() - t0:5.0f} s  {what} (RSS {server.rss():.0f} MB)", flush=True)


def one_session(browser, server: Server, paths: dict[str, Path] | None, timeout_s: float) -> float:
    """One browser session: upload and audit (or only open the page when ``paths`` is None); seconds taken.

    Each wait is ``timeout_s`` long (a million-row upload is read and its column editor
    built before the run button appears: minutes on a loaded machine), and each step is
    printed as it ends.
    """
    t0 = time.perf_counter()
    wait_ms = timeout_s * 1000
    context = browser.new_context(viewport={"width": 1400, "height": 3000})
    context.set_default_timeout(wait_ms)
    page = context.new_page()
    _open_upload_page(page, server.url)
    if paths is not None:
        _step(t0, server, "page open")
        inputs = page.locator('[data-testid="stFileUploaderDropzoneInput"]')
        for i, role in enumerate(("train", "holdout", "synthetic")):
            inputs.nth(i).set_input_files(str(paths[role]))
            # The file's chip shows once the browser has sent it; then the rerun reads it.
            page.locator('[data-testid="stFileUploader"]').nth(i).locator('[data-testid="stFileChipName"]').wait_for()
            _wait_idle(page, timeout_s)
            _step(t0, server, f"{role} uploaded and read")
        button = page.get_by_role("button", name="Run the audit")
        button.wait_for()
        _wait_idle(page, timeout_s)
        _step(t0, server, "column editor and run button shown")
        button.click()
        page.get_by_text("Result:").first.wait_for()
        _wait_idle(page, timeout_s)
        errors = page.locator('[data-testid="stException"]')
        if errors.count():
            raise SystemExit(f"the audit failed: {errors.first.inner_text()[:300]}")
        _step(t0, server, "audit shown")
    context.close()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the uploaded training and synthetic tables")
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--linger", type=float, default=180.0, help="seconds to watch after the last session closed")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds one upload or audit may take")
    parser.add_argument("--tables", type=Path, default=None,
                        help="folder to write the tables to once and reuse (default: a temporary folder)")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        if args.tables is not None:
            args.tables.mkdir(parents=True, exist_ok=True)
        paths = make_tables(args.tables or Path(tmp), args.rows)
        sizes = ", ".join(f"{r} {p.stat().st_size / MB:.0f} MB" for r, p in paths.items())
        print(f"tables: {args.rows:,} rows ({sizes}), written in {time.perf_counter() - t0:.0f} s", flush=True)
        server = Server(ROOT / "artifacts" / "measure_server_memory.log" if (ROOT / "artifacts").is_dir()
                        else (args.tables or Path(tmp)) / "streamlit.log")
        try:
            print(f"server started: RSS {server.rss():.0f} MB", flush=True)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_FLAGS))
                one_session(browser, server, None, args.timeout)
                time.sleep(5)
                idle = server.rss()
                print(f"idle (one page load, session closed): RSS {idle:.0f} MB", flush=True)
                peak = Peak(server)
                peak.start()
                for i in range(args.sessions):
                    seconds = one_session(browser, server, paths, args.timeout)
                    print(f"session {i + 1:2d}: audited and closed in {seconds:.0f} s; RSS {server.rss():.0f} MB "
                          f"(+{server.rss() - idle:.0f} MB over idle)", flush=True)
                browser.close()
            closed = time.perf_counter()
            while (waited := time.perf_counter() - closed) < args.linger:
                time.sleep(15)
                print(f"  {waited + 15:4.0f} s after the last session closed: RSS {server.rss():.0f} MB "
                      f"(+{server.rss() - idle:.0f} MB over idle)", flush=True)
            peak.running = False
            final = server.rss()
            print(f"peak while the sessions ran: {peak.peak:.0f} MB (+{peak.peak - idle:.0f} MB)")
            verdict = "met" if final - idle < 1024 else "NOT met"
            print(f"after {args.sessions} audits of {args.rows:,}-row uploads in closed sessions: RSS {final:.0f} MB, "
                  f"+{final - idle:.0f} MB over idle {idle:.0f} MB (target < +1024 MB: {verdict})")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
