"""docker-compose.yml's cluster, without Docker: its scheduler, its two workers and the dashboard, run as
processes with the exact commands and environment the compose file gives each service (ports moved to free
local ones, PYTHONPATH to this checkout), then the dashboard driven in Chromium.

Docker itself is not available on the development machines or in CI; this runs everything the compose file
runs except the containers: a wrong entrypoint, flag or variable in it fails here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.browser.test_dashboard import SHOTS, _free_port, _wait_result, browser  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.browser, pytest.mark.cluster]  # it starts Dask workers too: run alone


def _command(entrypoint: list[str], ports: dict[str, str]) -> list[str]:
    """The service's entrypoint with its ports moved ("dask" is the venv's)."""
    cmd = [str(Path(sys.executable).parent / entrypoint[0]), *entrypoint[1:]]
    return [ports.get(arg, arg).replace("scheduler:8786", f"127.0.0.1:{ports['8786']}") for arg in cmd]


@pytest.fixture(scope="module")
def compose_cluster(tmp_path_factory):
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    ports = {"8786": str(_free_port()), ":8787": f":{_free_port()}"}
    logs = tmp_path_factory.mktemp("compose")
    procs, files = [], []

    def start(name: str, cmd: list[str], env: dict[str, str]) -> None:
        files.append((logs / f"{name}.log").open("w"))
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env}, stdout=files[-1], stderr=subprocess.STDOUT))

    for name in ("scheduler", "worker-1", "worker-2"):
        env = {k: str(v) for k, v in services[name].get("environment", {}).items()}
        assert env.pop("PYTHONPATH") == "/app"  # the Dockerfile's WORKDIR: this checkout here
        start(name, _command(services[name]["entrypoint"], ports), env | {"PYTHONPATH": str(ROOT)})
    address = f"tcp://127.0.0.1:{ports['8786']}"
    from distributed import Client

    with Client(address, timeout=60) as client:
        client.wait_for_workers(2, timeout=90)
        port = _free_port()
        env = {k: str(v) for k, v in services["dashboard"]["environment"].items()}
        assert env["AUDIT_DASK_SCHEDULER"] == "tcp://scheduler:8786"
        env["AUDIT_DASK_SCHEDULER"] = address
        # the Dockerfile's entrypoint, on a free port
        start("dashboard", [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                            "--server.address", "127.0.0.1"], env)  # fmt: skip
        yield f"http://127.0.0.1:{port}", client
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=30)
    for file in files:
        file.close()


def test_the_compose_services_run_an_audit_on_the_cluster(compose_cluster, browser):
    url, client = compose_cluster
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    deadline = time.time() + 90
    while True:  # the dashboard's first start takes a while
        try:
            page.goto(url)
            break
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(1)
    page.get_by_text("2 workers, 2 threads").first.wait_for(timeout=60_000)  # the sidebar names the cluster
    page.get_by_role("button", name="Run on the sample").first.click()  # the synthetic-data audit
    page.get_by_role("heading", name="Synthetic-data risk").first.wait_for(timeout=60_000)
    _wait_result(page, 300)  # not only idle: a quiet second can fall between the page switch and the run's output
    page.screenshot(path=str(SHOTS / "compose_cluster.png"), full_page=True)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert page.get_by_text("UNSAFE").count() >= 1
    # the nearest-neighbour search ran on the compose workers
    prefixes = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    assert any("block_minimum" in p for p in prefixes), prefixes
    page.close()
