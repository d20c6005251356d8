"""Writing output: to stdout, or atomically to a file (temporary file, then rename),
so that an error or an interrupt never leaves a partial file or clobbers the old one.

``-o`` writes regular files only: a device, FIFO or socket (also through a symlink, and
anything under /dev or /proc) is refused, so is a folder, a name ending in '/' and a
file that is an input of the same command.  A symlink to a regular file is written
through (the link stays).  Several files that belong together (a Markdown report and
its images) are all written to temporary names first and renamed last.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

from oracle.errors import OracleError

_SPECIAL = ("/dev/", "/proc/", "/sys/")


def _refuse(path: str, message: str, hint: str | None = None) -> OracleError:
    return OracleError(message, file=path, path="-o", hint=hint)


def _is_special(p: Path) -> bool:
    text = str(p.absolute()) + "/"
    return text.startswith(_SPECIAL)


def check_target(path: str | Path) -> Path:
    """The file ``-o path`` writes to (symlinks to regular files followed), after
    refusing every target -o must not replace."""
    from oracle.load.source import is_input

    text = str(path)
    if text.endswith(("/", os.sep)):
        raise _refuse(text, "ends in '/', so it names a folder; expected a file name", f"e.g. {text}out")
    target = Path(text)
    if _is_special(target):
        raise _refuse(text, "is a system path; -o writes regular files only", "use '-o -' for standard output")
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise _refuse(text, f"cannot write: {exc.strerror or exc}") from None
    except ValueError:  # a NUL byte
        raise _refuse(text, "is not a usable file name") from None
    real = Path(os.path.realpath(target)) if target.is_symlink() else target
    if _is_special(real):
        raise _refuse(text, f"leads to {real}; -o writes regular files only", "use '-o -' for standard output")
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise _refuse(text, "is a directory; expected a file to write")
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(text, "is not a regular file (a device, FIFO or socket); -o writes regular files only",
                          "use '-o -' for standard output")
        if is_input(st):
            raise _refuse(text, "is also an input of this command; refusing to overwrite it",
                          "write the output to another file")
    parent = real.parent if str(real.parent) else Path(".")
    if not parent.is_dir():
        raise _refuse(text, f"folder '{parent}' does not exist")
    return real


def _write_temp(target: Path, data: str | bytes) -> str:
    """``data`` in a new temporary file next to ``target``, with target's permissions."""
    mode = "wb" if isinstance(data, bytes) else "w"
    parent = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, target.stat().st_mode & 0o777 if target.exists() else 0o644 & ~_umask())
        except OSError:
            pass
    except BaseException:
        _unlink(tmp)
        raise
    return tmp


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def atomic_write_all(outputs: dict[str | Path, str | bytes]) -> None:
    """Write every file or none: check every target, write them all to temporary names,
    then rename (in the order given; put the file that refers to the others last)."""
    targets = [(str(p), check_target(p), data) for p, data in outputs.items()]
    temps: list[tuple[str, Path]] = []
    try:
        for shown, real, data in targets:
            try:
                temps.append((_write_temp(real, data), real))
            except OSError as exc:
                raise _error(shown, exc) from None
        while temps:
            tmp, real = temps[0]
            try:
                os.replace(tmp, real)
            except OSError as exc:
                raise _error(str(real), exc) from None
            temps.pop(0)
    finally:
        for tmp, _ in temps:
            _unlink(tmp)


def atomic_write(path: str | Path, data: str | bytes) -> None:
    atomic_write_all({path: data})


def _error(path: str, exc: OSError) -> OracleError:
    if isinstance(exc, PermissionError):
        return _refuse(path, "permission denied")
    return _refuse(path, f"cannot write: {exc.strerror or exc}")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_file(path: str | Path, data: str | bytes) -> None:
    """Write atomically; a file-system problem is a user-facing error naming the file."""
    atomic_write_all({path: data})


def write_stdout(text: str) -> None:
    """Print ``text``; a closed, full or broken standard output is one clear error."""
    if sys.stdout is None:  # started with standard output closed (>&-)
        raise OracleError("cannot write to standard output: it is closed", hint="use -o FILE")
    sys.stdout.write(text)  # a failure here is reported by the command group (one line, exit 2)
    sys.stdout.flush()


def emit(text: str, output: str | Path | None) -> None:
    """Print to stdout, or write atomically to ``output``."""
    if output is None or str(output) == "-":
        write_stdout(text)
    else:
        write_file(output, text)
