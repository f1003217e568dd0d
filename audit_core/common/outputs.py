"""Where the command line writes its results: checked before the audit, written safely.

:func:`check_outputs` runs before any input is read, for every subcommand, so that a
bad output path costs nothing: an empty name, a folder, a missing or read-only
folder, a symbolic link (its target would be replaced behind the user's back), the
same file as an input or as another output, a file inside a folder given as an input
(it would become one of the inputs). :func:`check_inputs` refuses an input path the
system cannot use at all (a 5,000-character name). :func:`write_outputs` then writes
every output or none: each regular file through a temporary file in the same folder and
a rename (nothing half-written, the old file intact on failure), special files (a pipe
such as ``>(cat)``, ``/dev/stdout``, a FIFO, a device such as ``/dev/full``) directly,
since renaming over them would replace them with a regular file; a FIFO that nobody
reads is given :data:`FIFO_WAIT_S` seconds, not forever. A write that fails is reported
as one sentence (:class:`~audit_core.common.errors.InputError`) and the files this run
created are removed. :func:`csv_text` is the one way a table becomes CSV text:
spreadsheet formulas in text cells are neutralised (the OWASP rule).
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from audit_core.common.errors import InputError

__all__ = ["FIFO_WAIT_S", "check_inputs", "check_outputs", "csv_text", "write_output", "write_outputs"]


def _special(st: os.stat_result) -> bool:
    """A FIFO, character device, socket: something written to, never replaced."""
    return not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def _stream(path: Path) -> bool:
    """``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``: the shell's own streams, written in place."""
    return str(path).startswith(("/dev/", "/proc/"))


def _shown(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _inside(path: Path, folder: Path) -> bool:
    """``path`` lies somewhere under the existing folder ``folder`` (links resolved)."""
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, RuntimeError):
        return False


def check_inputs(paths: Mapping[str, str | None]) -> None:
    """Refuse an input path the system cannot use at all (too long, a loop of links), before anything is read.

    A missing file is left to the reader of that input, which names it in its own sentence.
    """
    for flag, text in paths.items():
        if not text:
            continue
        try:
            os.stat(text)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(f"{flag} {_shown(str(text))} cannot be used ({exc.strerror}).") from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def check_outputs(outputs: Mapping[str, str | None], inputs: Sequence[str] = ()) -> None:
    """Refuse output paths that cannot or must not be written, before any work starts.

    Parameters
    ----------
    outputs : mapping of str to str or None
        Flag (e.g. ``"--json"``) to the path given; None = not asked for.
    inputs : sequence of str
        The other paths on the command line (inputs); no output may be one of them.

    Raises
    ------
    InputError
        One sentence naming the flag and what is wrong with its path.
    """
    given: dict[str, Path] = {}
    for flag, text in outputs.items():
        if text is None:
            continue
        if not str(text).strip():
            raise InputError(f"{flag} needs a file name; it was given an empty one.")
        path = Path(text)
        try:
            st = path.stat()
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise InputError(f"{flag} {_shown(str(text))} cannot be used ({exc.strerror}).") from None
        if st is None and path.is_symlink():
            raise InputError(f"{flag} {text} is a symbolic link to a missing file; give a plain file name.")
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise InputError(f"{flag} {text} is a folder; give a file name inside it.")
        if st is not None and (_special(st) or _stream(path)):
            if not os.access(path, os.W_OK):
                raise InputError(f"{flag} {text} cannot be written (permission denied).")
        else:
            if path.is_symlink():
                raise InputError(
                    f"{flag} {text} is a symbolic link to {os.path.realpath(path)}; give the file's own path "
                    "so that nothing is overwritten by surprise."
                )
            folder = path.parent
            if not folder.is_dir():
                raise InputError(f"{flag} {text}: the output folder {folder} does not exist.")
            if not os.access(folder, os.W_OK | os.X_OK):
                raise InputError(f"{flag} {text}: the folder {folder} is not writable.")
            if st is not None and not os.access(path, os.W_OK):
                raise InputError(f"{flag} {text} is read-only; give another file name.")
            for source in inputs:
                if not source or not _exists(Path(source)):
                    continue
                if _same_file(path, Path(source)):
                    raise InputError(f"{flag} {text} is the input file {source}; give another file name.")
                if Path(source).is_dir() and _inside(path, Path(source)):
                    raise InputError(
                        f"{flag} {text} is inside the input folder {source}, so it would become one of the "
                        "inputs; write it to another folder."
                    )
        for other_flag, other in given.items():
            if (st is None or not (_special(st) or _stream(path))) and _same_file(path, other):
                raise InputError(f"{flag} and {other_flag} name the same file {text}; give each its own name.")
        given[flag] = path


FIFO_WAIT_S = 5.0
"""How long a FIFO output waits for a reader before the write is refused (never forever)."""


def _open_special(path: Path, flag: str) -> int:
    """Open a pipe or device for appending; a FIFO without a reader is retried for :data:`FIFO_WAIT_S` seconds."""
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK)  # append: never truncate what a shell opened
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: a FIFO that nobody has opened for reading
                raise
            if time.monotonic() >= deadline:
                raise InputError(
                    f"Writing {flag} {path} failed: nothing read from this pipe for {FIFO_WAIT_S:g} s; "
                    "start its reader first."
                ) from None
            time.sleep(0.05)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)  # a reader is there: block as usual
    return fd


def _write_special(path: Path, payload: bytes, flag: str) -> None:
    fd = _open_special(path, flag)
    with open(fd, "ab", buffering=0) as handle:
        view = memoryview(payload)
        while view:
            view = view[handle.write(view) :]


def _payload(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _failed(flag: str, path: Path, exc: OSError) -> InputError:
    return InputError(f"Writing {flag} {path} failed ({exc.strerror or type(exc).__name__}).")


def _temporary(path: Path, payload: bytes, st: os.stat_result | None) -> str:
    """``payload`` in a temporary file next to ``path`` with the mode ``path`` has or would get; its name."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def write_outputs(
    files: Sequence[tuple[str, str | os.PathLike | None, str | bytes]], *, before_commit: Callable[[], None] | None = None
) -> None:
    """Write every ``(flag, path, data)`` (a None path is skipped) or none of them.

    Every regular file is first written under a temporary name next to it; then the pipes
    and devices are written, then ``before_commit`` is called (the CLI prints its summary on
    stdout there, so a stdout that cannot be written leaves no file either); only when all of
    that worked are the temporary files renamed into place. A failure removes the temporary
    files and any file this call created, and is one sentence (:class:`InputError`); a file it
    replaced keeps its new content only if every write succeeded.
    """
    staged: list[tuple[str, Path, str, bool]] = []  # flag, path, temporary file, path existed before
    done: list[tuple[Path, bool]] = []
    try:
        special: list[tuple[str, Path, bytes]] = []
        for flag, name, data in files:
            if name is None:
                continue
            path = Path(name)
            try:
                st = path.stat()
            except OSError:
                st = None
            if st is not None and (_special(st) or _stream(path)):
                special.append((flag, path, _payload(data)))
                continue
            try:
                staged.append((flag, path, _temporary(path, _payload(data), st), st is not None))
            except OSError as exc:
                raise _failed(flag, path, exc) from None
        for flag, path, payload in special:
            try:
                _write_special(path, payload, flag)
            except OSError as exc:
                raise _failed(flag, path, exc) from None
        if before_commit is not None:
            before_commit()
        while staged:
            flag, path, tmp, existed = staged[0]
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise _failed(flag, path, exc) from None
            staged.pop(0)
            done.append((path, existed))
    except BaseException:
        for _flag, _path, tmp, _existed in staged:
            Path(tmp).unlink(missing_ok=True)
        for path, existed in done:
            if not existed:
                path.unlink(missing_ok=True)
        raise


def write_output(path: str | os.PathLike, data: str | bytes, *, flag: str = "output") -> None:
    """Write ``data`` to ``path``: via a temporary file and a rename, or directly for a pipe/device.

    Raises
    ------
    InputError
        The write failed (disk full, permission, a reader that went away or never came): one sentence.
    """
    write_outputs([(flag, path, data)])


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _neutralised(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_text(frame: Any) -> str:
    """``frame`` as CSV text (no index) with spreadsheet formulas neutralised (the OWASP rule).

    A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
    leading single quote, so a spreadsheet shows it as text instead of running it
    (``=HYPERLINK(...)``, ``=cmd|' /C calc'!A0``). Numeric and boolean columns are
    untouched, and so is a text cell that is a plain number (``-5``, ``+1e3``): a negative
    number stays a number.
    """
    import pandas as pd

    out = frame.copy()
    for i in range(out.shape[1]):
        column = out.iloc[:, i]
        if pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
            continue
        if isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype(object)
        out.isetitem(i, column.map(_neutralised))
    return out.to_csv(index=False)
