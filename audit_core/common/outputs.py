"""Where the command line writes its results: checked before the audit, written safely.

:func:`check_outputs` runs before any input is read, for every subcommand, so that a
bad output path costs nothing: an empty name, a folder, a missing or read-only
folder, a symbolic link (its target would be replaced behind the user's back), the
same file as an input or as another output. :func:`write_output` then writes a
regular file through a temporary file in the same folder and a rename (nothing
half-written, the old file intact on failure), and writes special files (a pipe
such as ``>(cat)``, ``/dev/stdout``, a FIFO, a device such as ``/dev/full``)
directly, since renaming over them would replace them with a regular file. A write
that fails is reported as one sentence (:class:`~audit_core.common.errors.InputError`).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from audit_core.common.errors import InputError


def _special(st: os.stat_result) -> bool:
    """A FIFO, character device, socket: something written to, never replaced."""
    return not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def _stream(path: Path) -> bool:
    """``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``: the shell's own streams, written in place."""
    return str(path).startswith(("/dev/", "/proc/"))


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


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
            raise InputError(f"{flag} {text} cannot be used ({exc.strerror}).") from None
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
                if source and Path(source).exists() and _same_file(path, Path(source)):
                    raise InputError(f"{flag} {text} is the input file {source}; give another file name.")
        for other_flag, other in given.items():
            if (st is None or not (_special(st) or _stream(path))) and _same_file(path, other):
                raise InputError(f"{flag} and {other_flag} name the same file {text}; give each its own name.")
        given[flag] = path


def write_output(path: str | os.PathLike, data: str | bytes, *, flag: str = "output") -> None:
    """Write ``data`` to ``path``: via a temporary file and a rename, or directly for a pipe/device.

    Raises
    ------
    InputError
        The write failed (disk full, permission, a reader that went away): one sentence.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    try:
        st = path.stat()
    except OSError:
        st = None
    try:
        if st is not None and (_special(st) or _stream(path)):
            with open(path, "ab", buffering=0) as handle:  # append: never truncate what a shell opened
                view = memoryview(payload)
                while view:
                    view = view[handle.write(view) :]
            return
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
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise InputError(f"Writing {flag} {path} failed ({reason}).") from None
