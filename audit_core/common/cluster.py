"""Where the heavy steps run: in this process (the default) or on a Dask distributed cluster.

Three steps scale with the data and can be spread over a cluster: the Gower
nearest-neighbour search (:mod:`audit_core.synthetic.distributed_distance`), the fits of a
generator comparison (:func:`audit_core.synthetic.comparison.compare_generators`) and the
training of LiRA's M models (:func:`audit_core.lira.training.train_models`). Each
takes ``client=None``: without a client nothing changes; with one, the work is cut
into tasks that Dask schedules on its workers, and the results are the same numbers
as in one process.

The cluster comes from, in this order: ``--scheduler tcp://host:8786`` (the CLI) or
the ``AUDIT_DASK_SCHEDULER`` environment variable (CLI and dashboard), or
``--workers N`` for a local cluster of N single-threaded worker processes on this
machine. Connecting gives up after :data:`_CONNECT_TIMEOUT_S` seconds with one
sentence (an :class:`~audit_core.common.errors.InputError`).

Across machines the connection is encrypted and authenticated with TLS when the three
:data:`TLS_ENV_VARS` name the user's certificate files (a CA, this client's certificate
and its key): :func:`tls_security` builds distributed's ``Security`` with
``require_encryption=True`` and the address must then start with ``tls://``. The
scheduler unpickles what clients send it, so without TLS it must never be reachable
from outside a trusted network.

Faults: a worker that dies in the middle of a task is replaced by Dask (the task is
run again on another worker). When every worker is gone, or a task has killed
workers more often than Dask allows, :func:`run_tasks` stops the audit with one
sentence; a partial result is never returned.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from audit_core.common.errors import InputError

__all__ = [
    "ENV_VAR",
    "TLS_ENV_VARS",
    "cluster_client",
    "cluster_summary",
    "dashboard_cluster",
    "gather_tasks",
    "n_workers",
    "run_tasks",
    "scheduler_address",
    "tls_security",
]

ENV_VAR = "AUDIT_DASK_SCHEDULER"
"""Environment variable naming the scheduler (``tcp://host:8786``), read by the CLI and the dashboard."""

_CONNECT_TIMEOUT_S = 8.0
"""Seconds to reach the scheduler (and to see a first worker) before giving up."""

_HANDSHAKE_TIMEOUT_S = 3.0
"""Seconds a scheduler's address has to greet a new connection (a Dask server does at once) before it is taken for
something else (a web server)."""

_NO_WORKER_TIMEOUT_S = 30.0
"""Seconds a running audit waits with no worker left before it stops."""

TLS_ENV_VARS = {"ca": "AUDIT_DASK_TLS_CA", "cert": "AUDIT_DASK_TLS_CERT", "key": "AUDIT_DASK_TLS_KEY"}
"""Environment variables naming the PEM files for TLS to the scheduler: the CA that signed the cluster's
certificates, this client's certificate and its private key (all three, or none for plain tcp://)."""

_MAX_LOCAL_WORKERS = 64
"""Largest ``--workers`` for a local cluster."""

_ADDRESS = re.compile(r"^(tcp|tls|ws|wss|inproc)://[^\s/]+$|^[A-Za-z0-9.\-\[\]:]+:\d+$")


def scheduler_address(scheduler: str | None = None) -> str | None:
    """The scheduler to use: ``scheduler`` if given, else ``$AUDIT_DASK_SCHEDULER``, else None."""
    address = (scheduler or os.environ.get(ENV_VAR) or "").strip()
    return address or None


def _quiet_dask_logs() -> None:
    # Connection retries and worker restarts are reported by this module in one sentence;
    # Dask's own log lines would add tracebacks to the CLI's stderr.
    for name in ("distributed", "distributed.nanny", "distributed.worker", "distributed.scheduler", "distributed.core"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def tls_security(environ: Any = None) -> Any:
    """distributed's ``Security`` from :data:`TLS_ENV_VARS` (TLS required), or None when none of them is set.

    Raises
    ------
    InputError
        Only some of the three are set, or a file they name does not exist.
    """
    env = os.environ if environ is None else environ
    paths = {role: (env.get(var) or "").strip() for role, var in TLS_ENV_VARS.items()}
    if not any(paths.values()):
        return None
    missing = [TLS_ENV_VARS[role] for role, path in paths.items() if not path]
    if missing:
        raise InputError(
            f"TLS to the Dask scheduler needs all of {', '.join(TLS_ENV_VARS.values())}; {', '.join(missing)} "
            "is not set."
        )
    for role, path in paths.items():
        if not os.path.isfile(path):
            raise InputError(f"{TLS_ENV_VARS[role]} names {path}, which is not a file; give the PEM file's path.")
    from distributed.security import Security

    return Security(tls_ca_file=paths["ca"], tls_client_cert=paths["cert"], tls_client_key=paths["key"],
                    require_encryption=True)  # fmt: skip


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a ``tcp://`` (or bare ``host:port``) address, None for the other schemes."""
    rest = address.removeprefix("tcp://")
    if "://" in rest:
        return None
    host, colon, port = rest.rpartition(":")
    if not colon or not port.isdigit() or "]" in port:
        return rest.strip("[]"), 8786  # distributed's default port
    return host.strip("[]"), int(port)


def _check_answers_as_dask(address: str) -> None:
    """Refuse a ``tcp://`` address where something other than a Dask scheduler listens, within the connect timeout.

    A Dask server writes its handshake as soon as it accepts a connection: a frame count (8 bytes, little-endian)
    then the frames. A web server (or anything that waits for the client to speak first) sends nothing, and
    distributed would then wait for its handshake without end; a server that speaks first another protocol (SSH)
    sends bytes that are no small frame count. Either is one sentence here, before distributed connects.
    """
    import socket

    where = _host_port(address)
    if where is None:
        return
    host, port = where
    wait = f"; start it (dask scheduler) or fix --scheduler or {ENV_VAR}"
    try:
        conn = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S)
    except (OSError, ValueError, OverflowError):
        raise InputError(f"Could not reach the Dask scheduler at {address} within {_CONNECT_TIMEOUT_S:g} s{wait}.") from None
    head = b""
    try:
        with conn:
            conn.settimeout(_HANDSHAKE_TIMEOUT_S)
            while len(head) < 8:
                chunk = conn.recv(8 - len(head))
                if not chunk:
                    break
                head += chunk
    except OSError:  # socket.timeout included: nothing said
        pass
    frames = int.from_bytes(head, "little") if len(head) == 8 else 0
    if not 1 <= frames <= 64:
        said = "sent nothing" if not head else f"sent {head[:8]!r}"
        raise InputError(f"Something listens at {address} but it is not a Dask scheduler (it {said} where a scheduler "
                         f"greets a client){wait}.")  # fmt: skip


def _connect(address: str):
    from distributed import Client

    if not _ADDRESS.match(address):
        raise InputError(
            f"The Dask scheduler address {address!r} is not of the form tcp://host:8786; fix --scheduler or {ENV_VAR}."
        )
    if address.startswith("inproc://"):
        raise InputError(f"The address {address} names a scheduler inside another Python process's memory, which no "
                         f"other process can reach; give its tcp://host:8786 address (--scheduler or {ENV_VAR}).")  # fmt: skip
    security = tls_security()
    if security is not None and not address.startswith("tls://"):
        raise InputError(
            f"TLS certificates are set ({', '.join(TLS_ENV_VARS.values())}) but the scheduler address {address} "
            "does not start with tls://; use tls://host:8786."
        )
    if security is None and address.startswith("tls://"):
        raise InputError(
            f"The scheduler address {address} asks for TLS; set {', '.join(TLS_ENV_VARS.values())} to the CA, "
            "certificate and key files (see the README, 'Running on a cluster')."
        )
    _check_answers_as_dask(address)
    try:
        client = _within(_CONNECT_TIMEOUT_S * 3, lambda: Client(address, timeout=_CONNECT_TIMEOUT_S,
                                                                set_as_default=False, security=security))  # fmt: skip
    except (OSError, TimeoutError, ValueError, MemoryError) as exc:
        raise InputError(
            f"Could not reach the Dask scheduler at {address} within {_CONNECT_TIMEOUT_S:g} s; "
            f"start it (dask scheduler) or fix --scheduler or {ENV_VAR}."
        ) from exc
    try:
        client.wait_for_workers(1, timeout=_CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        _close(client)
        raise InputError(
            f"The Dask scheduler at {address} has no worker after {_CONNECT_TIMEOUT_S:g} s; start one (dask worker {address})."
        ) from exc
    return client


def _within(seconds: float, make: Callable[[], Any]) -> Any:
    """``make()``, or :class:`TimeoutError` when it has not returned after ``seconds`` (it is then left to finish
    on a daemon thread: a connection that never completes its handshake must not hold the command forever)."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = make()
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="dask-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError(f"no connection after {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _close(client: Any) -> None:
    """Close a client; a scheduler that no longer answers does not turn the end of an audit into a traceback."""
    with contextlib.suppress(Exception):
        client.close(timeout=_CONNECT_TIMEOUT_S)


@contextlib.contextmanager
def cluster_client(scheduler: str | None = None, workers: int | None = None) -> Iterator[Any]:
    """A ``distributed.Client`` for the audit, or None to run in this process.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler; default ``$AUDIT_DASK_SCHEDULER``.
    workers : int, optional
        Start a local cluster of this many single-threaded worker processes instead
        (closed again when the block ends).

    Yields
    ------
    distributed.Client or None
        None when neither is given (the single-process default).
    """
    if workers is not None and scheduler:
        raise InputError("Give either --scheduler (a running cluster) or --workers (a local one), not both.")
    if workers is not None and not 1 <= int(workers) <= _MAX_LOCAL_WORKERS:
        raise InputError(f"--workers must be between 1 and {_MAX_LOCAL_WORKERS}; got {workers}.")
    address = None if workers is not None else scheduler_address(scheduler)
    if workers is None and address is None:
        yield None
        return
    _quiet_dask_logs()
    cluster = None
    if workers is not None:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=int(workers), threads_per_worker=1, processes=True, dashboard_address=":0",
            env={"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
        )
        client = Client(cluster, set_as_default=False)
    else:
        assert address is not None  # one of the two was given (above)
        client = _connect(address)
    try:
        yield client
    finally:
        _close(client)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close()


def n_workers(client: Any) -> int:
    """Number of workers the scheduler knows now."""
    return len(client.scheduler_info(n_workers=-1)["workers"])


def cluster_summary(client: Any) -> dict[str, Any]:
    """Address, worker count, threads and the link to Dask's own dashboard (for the sidebar)."""
    info = client.scheduler_info(n_workers=-1)
    workers = info.get("workers", {})
    return {
        "address": client.scheduler.address,
        "workers": len(workers),
        "threads": int(sum(w.get("nthreads", 0) for w in workers.values())),
        "dashboard": client.dashboard_link,
    }


def gather_tasks(
    client: Any,
    futures: Sequence[Any],
    *,
    labels: Sequence[str] | None = None,
    on_done: Callable[[int, Any], None] | None = None,
    on_error: Callable[[int, BaseException], Any] | None = None,
    resubmit: Callable[[int], Any] | None = None,
) -> list[Any]:
    """Wait for every future and return their results in order; never a partial list.

    ``on_done(i, result)`` is called as each task finishes (for progress). A task
    that raised either goes to ``on_error(i, exc)``, whose return value takes its
    place (a comparison keeps a failed generator in its own row), or, without
    ``on_error``, is raised again (an InputError stays one sentence); so is a task
    that killed its workers more often than Dask allows (``KilledWorker``, as an
    InputError). A finished result lost with its worker is computed again by
    ``resubmit(i)`` (a new future for task i; twice at most; :func:`run_tasks`
    provides it). A cluster with no worker left for :data:`_NO_WORKER_TIMEOUT_S`
    seconds stops the audit with one sentence.
    """
    from distributed.client import FutureCancelledError as CancelledError
    from distributed.scheduler import KilledWorker

    labels = list(labels) if labels is not None else [f"task {i + 1}" for i in range(len(futures))]
    index = {f.key: i for i, f in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    pending = set(futures)
    lonely_since: float | None = None
    again = [0] * len(futures)
    try:
        while pending:
            done, pending = _wait_some(client, pending)
            if not done:
                lonely_since = _check_workers_left(client, lonely_since, len(pending), len(futures))
                continue
            for fut in done:
                i = index[fut.key]
                try:
                    results[i] = fut.result()
                except KilledWorker as exc:
                    died = InputError(f"The Dask workers running {labels[i]} died repeatedly (out of memory?)")
                    if on_error is None:
                        raise InputError(f"{died}; the audit stopped without a result.") from exc
                    results[i] = on_error(i, died)
                except CancelledError as exc:
                    if resubmit is not None and again[i] < 2:
                        again[i] += 1
                        new = resubmit(i)
                        index[new.key] = i
                        pending.add(new)
                        continue
                    raise InputError(
                        f"The input of {labels[i]} was lost with a Dask worker that died; "
                        "the audit stopped without a result (run it again)."
                    ) from exc
                except InputError as exc:  # one sentence already
                    if on_error is None:
                        raise
                    results[i] = on_error(i, exc)
                except Exception as exc:  # handed to on_error, or one sentence: never a traceback on the page
                    if on_error is None:
                        raise InputError(_task_failed(labels[i], exc)) from exc
                    results[i] = on_error(i, exc)
                if on_done is not None:
                    on_done(i, results[i])
    finally:
        for fut in pending:
            fut.cancel()
    return results


def _wait_some(client: Any, pending: set) -> tuple[set, set]:
    """``(done, pending)`` after at most a second; a future cancelled with its worker counts as done (handled there)."""
    from distributed import wait
    from distributed.client import FuturesCancelledError

    try:
        with client.as_current():
            done, pending = wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED")
        return set(done), set(pending)
    except TimeoutError:
        return set(), pending
    except FuturesCancelledError:
        return {f for f in pending if f.status != "pending"}, {f for f in pending if f.status == "pending"}


def _check_workers_left(client: Any, lonely_since: float | None, unfinished: int, total: int) -> float | None:
    """Since when the cluster has had no worker (None: it has some); one sentence after _NO_WORKER_TIMEOUT_S."""
    if n_workers(client) > 0:
        return None
    lonely_since = lonely_since or time.monotonic()
    if time.monotonic() - lonely_since > _NO_WORKER_TIMEOUT_S:
        raise InputError(
            f"The Dask cluster lost all its workers during the audit ({unfinished} of {total} tasks unfinished); "
            "the audit stopped without a result."
        )
    return lonely_since


def _task_failed(label: str, exc: BaseException) -> str:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return (
        f"The Dask cluster could not run {label} ({first}); the audit stopped without a result. The scheduler and "
        "every worker need this project's environment: the same requirements.txt and this folder on PYTHONPATH."
    )


def run_tasks(
    client: Any,
    fn: Callable[..., Any],
    arguments: Sequence[tuple],
    *,
    labels: Sequence[str] | None = None,
    on_done: Callable[[int, Any], None] | None = None,
    on_error: Callable[[int, BaseException], Any] | None = None,
    inputs_again: Callable[[int], tuple] | None = None,
) -> list[Any]:
    """``[fn(*args) for args in arguments]`` as Dask tasks, through :func:`gather_tasks` (a lost result is rerun).

    ``inputs_again(i)`` gives task i's arguments afresh for a rerun: scattered inputs (``client.scatter``) have no
    lineage, so when the worker holding them dies a rerun with the same futures fails again; they are scattered anew.
    """

    def submit(i: int, again: bool = False) -> Any:
        args = inputs_again(i) if again and inputs_again is not None else arguments[i]
        return client.submit(fn, *args, pure=False)

    futures = [submit(i) for i in range(len(arguments))]
    return gather_tasks(client, futures, labels=labels, on_done=on_done, on_error=on_error,
                        resubmit=lambda i: submit(i, again=True))  # fmt: skip


def dashboard_cluster(address: str) -> dict[str, Any]:
    """For the dashboard's sidebar: ``{"client": Client}`` connected to ``address``, or ``{"error": sentence}``."""
    _quiet_dask_logs()
    try:
        return {"client": _connect(address)}
    except InputError as exc:
        return {"error": str(exc)}
