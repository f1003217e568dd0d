"""The pieces the Dockerfile and the README rely on are the ones CI exercises."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_dockerfile_installs_the_pinned_requirements_and_serves_app():
    docker = (ROOT / "Dockerfile").read_text()
    assert "COPY requirements.txt" in docker
    assert "pip install -r requirements.txt" in docker
    assert re.search(r'ENTRYPOINT \["streamlit", "run", "app.py"', docker)
    assert "EXPOSE 8501" in docker
    assert "/_stcore/health" in docker
    assert re.search(r"^USER (?!root)\w+", docker, flags=re.MULTILINE)


def test_requirements_are_pinned_and_torch_is_the_cpu_friendly_pin():
    lines = [ln.strip() for ln in (ROOT / "requirements.txt").read_text().splitlines()]
    reqs = [ln for ln in lines if ln and not ln.startswith("#")]
    assert all("==" in r for r in reqs), reqs
    assert "torch==2.13.0" in reqs
    assert not any(r.startswith(("torchvision", "tabpfn")) for r in reqs)


def test_streamlit_config_matches_upload_limit():
    from audit_core.common.tables import MAX_UPLOAD_MB

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB
    assert config["browser"]["gatherUsageStats"] is False


def test_readme_commands_are_the_ci_commands():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make app" in readme
    assert "make test" in readme
    assert "make test" in ci


def test_backend_never_imports_streamlit():
    for path in (ROOT / "audit_core").rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"^\s*(import|from) streamlit", text, flags=re.MULTILINE), path


def test_compose_runs_scheduler_workers_and_dashboard_from_the_dockerfile_image():
    import yaml

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {"scheduler", "worker-1", "worker-2", "dashboard"} <= set(services)
    assert {s.get("build") for s in services.values()} == {"."}  # one image, built from the Dockerfile
    assert len({s.get("image") for s in services.values()}) == 1
    assert "entrypoint" not in services["dashboard"]  # the Dockerfile's streamlit entry
    assert services["dashboard"]["environment"]["AUDIT_DASK_SCHEDULER"] == "tcp://scheduler:8786"
    assert services["scheduler"]["entrypoint"][:2] == ["dask", "scheduler"]
    for name in ("worker-1", "worker-2"):
        assert services[name]["entrypoint"][:3] == ["dask", "worker", "tcp://scheduler:8786"]
