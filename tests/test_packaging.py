"""The pieces the Dockerfile and the README rely on are the ones CI exercises."""

import json
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_dockerfile_installs_the_pinned_requirements_and_serves_app():
    docker = (ROOT / "Dockerfile").read_text()
    assert "COPY requirements.txt" in docker
    assert "pip install -r requirements.txt" in docker
    assert re.search(r'ENTRYPOINT \["sh", "-c", "exec streamlit run app.py ', docker)
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
    from audit_core.common.table_files import MAX_UPLOAD_MB

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


# ----------------------------------------------------------------------------- issue 21: closed by default
# No Docker daemon here (nor in CI) can pull a base image, so the image and the compose file are checked
# statically: what they claim is read from the files themselves.
def _dockerfile_instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` per instruction, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return [(ln.split(None, 1)[0].upper(), ln.split(None, 1)[1] if " " in ln else "") for ln in lines]


def test_dockerfile_is_non_root_with_a_health_check_cpu_torch_and_chromium():
    steps = _dockerfile_instructions()
    kinds = [k for k, _ in steps]
    users = [arg for k, arg in steps if k == "USER"]
    assert users, "no USER"
    assert users[-1] not in ("root", "0")  # the server runs as the last USER
    assert kinds.index("USER") < kinds.index("ENTRYPOINT")
    health = [arg for k, arg in steps if k == "HEALTHCHECK"]
    assert len(health) == 1
    assert "http://127.0.0.1:8501/_stcore/health" in health[0]
    runs = [arg for k, arg in steps if k == "RUN"]
    assert sum("pip install -r requirements.txt" in r for r in runs) == 1  # the install line is requirements.txt
    assert not any("pip install" in r and "-r requirements.txt" not in r and "torch==" not in r for r in runs)
    torch = next(r for r in runs if "torch==" in r)
    assert '--index-url "$TORCH_INDEX"' in torch
    assert "grep -E '^torch==' requirements.txt" in torch  # the version requirements.txt pins, never another
    assert "ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu" in (ROOT / "Dockerfile").read_text()
    assert any("apt-get install" in r and re.search(r"\bchromium\b", r) for r in runs)  # the PDF button works


def test_the_image_listens_on_127_0_0_1_unless_audit_host_says_otherwise():
    steps = _dockerfile_instructions()
    env = " ".join(arg for k, arg in steps if k == "ENV")
    assert "AUDIT_HOST=127.0.0.1" in env
    entry = json.loads(next(arg for k, arg in steps if k == "ENTRYPOINT"))
    assert entry[:2] == ["sh", "-c"]
    assert entry[2].startswith("exec streamlit run app.py --server.port=8501")
    assert '--server.address="$AUDIT_HOST"' in entry[2]
    readme = (ROOT / "README.md").read_text()
    assert "-e AUDIT_HOST=0.0.0.0" in readme


def test_compose_publishes_no_scheduler_port_and_binds_status_pages_to_localhost():
    import yaml

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    published = {name: [str(p) for p in s.get("ports", [])] for name, s in services.items()}
    assert not any(p.split(":")[-1].split("/")[0] == "8786" for ports in published.values() for p in ports)
    assert published["scheduler"] == ["127.0.0.1:8787:8787"]  # Dask's status page: this machine only
    assert published["dashboard"] == ["${AUDIT_PUBLISH:-127.0.0.1}:8501:8501"]  # the dashboard: published
    assert published["worker-1"] == published["worker-2"] == []
    assert compose["networks"]["cluster"]["internal"] is True
    for name in ("scheduler", "worker-1", "worker-2", "dashboard"):
        assert "cluster" in services[name]["networks"]
    assert services["worker-1"]["networks"] == ["cluster"]  # workers: no route out at all
    assert services["dashboard"]["environment"]["AUDIT_HOST"] == "0.0.0.0"  # inside its container only


def test_make_app_listens_on_127_0_0_1_unless_asked():
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^HOST\s*\?=\s*127\.0\.0\.1$", make, flags=re.MULTILINE)
    assert "--server.address $(HOST)" in make
    readme = (ROOT / "README.md").read_text()
    assert "make app HOST=0.0.0.0" in readme


def test_readme_command_line_examples_write_into_out():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Headless: the same audits from the command line", 1)[1].split("```", 2)[1]
    outputs = re.findall(r"--(?:json|html|pdf|records|out) (\S+)", block)
    assert len(outputs) >= 10
    assert all(p.startswith("out/") for p in outputs), outputs
    assert len(set(outputs)) == len(outputs)  # no example overwrites another's output
    assert "out/" in (ROOT / ".gitignore").read_text().splitlines()
