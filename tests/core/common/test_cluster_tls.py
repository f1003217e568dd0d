"""TLS to the Dask scheduler (issue 21, "closed by default"): certificates from the user, named by environment variables.

A throw-away CA and one certificate it signed are made with the ``openssl`` command; a local
cluster requires TLS with them, and ``cluster_client`` reaches it only through the variables.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from audit_core.common.cluster import TLS_ENV_VARS, cluster_client, n_workers, tls_security
from audit_core.common.errors import InputError

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make certificates"),
]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory) -> dict[str, Path]:
    """A CA, and a certificate for 127.0.0.1 signed by it (the scheduler, the worker and the client share it)."""
    d = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=audit test CA", cwd=d)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr", "-subj", "/CN=127.0.0.1",
             cwd=d)  # fmt: skip
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "node.pem",
             "-days", "2", "-extfile", "san.cnf", cwd=d)  # fmt: skip
    return {"ca": d / "ca.pem", "cert": d / "node.pem", "key": d / "node.key"}


@pytest.fixture(scope="module")
def tls_cluster(certificates):
    from distributed import LocalCluster
    from distributed.security import Security

    c = {k: str(v) for k, v in certificates.items()}
    security = Security(
        tls_ca_file=c["ca"], tls_scheduler_cert=c["cert"], tls_scheduler_key=c["key"], tls_worker_cert=c["cert"],
        tls_worker_key=c["key"], tls_client_cert=c["cert"], tls_client_key=c["key"], require_encryption=True,
    )
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                      security=security, dashboard_address=":0") as cluster:  # fmt: skip
        yield cluster.scheduler_address


def _env(monkeypatch, certificates, **only: bool) -> None:
    for role, var in TLS_ENV_VARS.items():
        if only.get(role, True):
            monkeypatch.setenv(var, str(certificates[role]))
        else:
            monkeypatch.delenv(var, raising=False)


def test_the_variables_connect_over_tls_and_run_a_task(tls_cluster, certificates, monkeypatch):
    assert tls_cluster.startswith("tls://")
    _env(monkeypatch, certificates)
    security = tls_security()
    assert security.require_encryption
    assert security.tls_ca_file == str(certificates["ca"])
    with cluster_client(tls_cluster) as client:
        assert n_workers(client) == 1
        assert client.submit(sum, [1, 2, 3]).result(timeout=30) == 6


def test_without_the_variables_the_tls_scheduler_is_not_reached(tls_cluster, monkeypatch):
    for var in TLS_ENV_VARS.values():
        monkeypatch.delenv(var, raising=False)
    assert tls_security() is None
    with pytest.raises(InputError, match="asks for TLS; set AUDIT_DASK_TLS_CA, AUDIT_DASK_TLS_CERT, AUDIT_DASK_TLS_KEY"), \
            cluster_client(tls_cluster):
        pass


def test_half_set_or_wrong_variables_are_one_sentence(certificates, monkeypatch, tmp_path):
    _env(monkeypatch, certificates, key=False)
    with pytest.raises(InputError, match="needs all of AUDIT_DASK_TLS_CA, AUDIT_DASK_TLS_CERT, AUDIT_DASK_TLS_KEY; "
                                         "AUDIT_DASK_TLS_KEY is not set"):  # fmt: skip
        tls_security()
    _env(monkeypatch, certificates)
    monkeypatch.setenv("AUDIT_DASK_TLS_CA", str(tmp_path / "absent.pem"))
    with pytest.raises(InputError, match=r"AUDIT_DASK_TLS_CA names .*absent.pem, which is not a file"):
        tls_security()
    _env(monkeypatch, certificates)
    with pytest.raises(InputError, match="does not start with tls://"), cluster_client("tcp://127.0.0.1:1"):
        pass


@pytest.mark.slow
def test_a_client_with_other_certificates_is_refused(tls_cluster, certificates, monkeypatch, tmp_path):
    """TLS authenticates as well as encrypts: a certificate the cluster's CA did not sign does not connect."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.pem", "-days", "2",
             "-subj", "/CN=127.0.0.1", cwd=tmp_path)  # fmt: skip
    monkeypatch.setenv("AUDIT_DASK_TLS_CA", str(tmp_path / "other.pem"))
    monkeypatch.setenv("AUDIT_DASK_TLS_CERT", str(tmp_path / "other.pem"))
    monkeypatch.setenv("AUDIT_DASK_TLS_KEY", str(tmp_path / "other.key"))
    with pytest.raises(InputError, match="Could not reach the Dask scheduler"), cluster_client(tls_cluster):
        pass
