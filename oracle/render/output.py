"""Writing output: to stdout, or atomically to a file (temporary file, then rename),
so that an error or an interrupt never leaves a partial file or clobbers the old one.

``-o`` writes regular files only: a device, FIFO or socket (also through a symlink, and
anything under /dev, /proc or /sys, however reached: a symlinked folder, a bind mount)
is refused, so is a folder, a name ending in '/', a file that is an input of the same
command (by device and inode, so also through a symlink or a hard link) and a
write-protected file or folder (checked on the mode bits: root would not get EACCES).
A symlink to a regular file is written through (the link stays).  Several files that
belong together (a Markdown report and its images) are all written to temporary names
first and renamed last; a temporary name is short whatever the target's (a legal
255-byte name stays writable).  :func:`append_lock` serializes commands that read a
file and write it back (``oracle import --append``), so that none loses another's rows.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from oracle.errors import OracleError

_SPECIAL = ("/dev/", "/proc/", "/sys/")


def _refuse(path: str, message: str, hint: str | None = None) -> OracleError:
    return OracleError(message, file=path, path="-o", hint=hint)


def _is_special(p: Path) -> bool:
    text = str(p.absolute()) + "/"
    return text.startswith(_SPECIAL)


def _special_devices() -> set[int]:
    """The file systems of /dev, /dev/shm, /proc and /sys where they are not the root's."""
    def dev(root: str) -> int | None:
        try:
            return os.stat(root).st_dev
        except OSError:
            return None

    return {dev(r) for r in ("/dev", "/dev/shm", "/proc", "/sys")} - {dev("/"), None}  # type: ignore[return-value]


def _write_protected(mode: int) -> bool:
    return not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)


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
    real = Path(os.path.realpath(target))  # every symlink resolved, folders' too
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
        if _write_protected(st.st_mode):
            raise _refuse(text, f"is write-protected (mode {stat.S_IMODE(st.st_mode):04o}); refusing to replace it",
                          "make it writable (chmod u+w) or write to another file")
    parent = real.parent
    try:
        pst = os.stat(parent)
    except OSError:
        raise _refuse(text, f"folder '{parent}' does not exist") from None
    if not stat.S_ISDIR(pst.st_mode):
        raise _refuse(text, f"folder '{parent}' does not exist")
    if pst.st_dev in _special_devices():
        raise _refuse(text, f"is in {parent}, a system file system; -o writes regular files only",
                      "use '-o -' for standard output")
    if _write_protected(pst.st_mode):
        raise _refuse(text, f"folder '{parent}' is write-protected (mode {stat.S_IMODE(pst.st_mode):04o})")
    return real


def _write_temp(target: Path, data: str | bytes) -> str:
    """``data`` in a new temporary file next to ``target``, with target's permissions."""
    with _temp(target, "wb" if isinstance(data, bytes) else "w") as (fh, tmp):
        fh.write(data)
    return tmp


@contextlib.contextmanager
def _temp(target: Path, mode: str) -> Iterator[tuple]:
    """(open file, its name): a new temporary file next to ``target``, flushed to disk
    and given target's permissions when the block ends; removed if it raises."""
    parent = target.parent if str(target.parent) else Path(".")
    short = target.name.encode("utf-8", "surrogateescape")[:64].decode("utf-8", "ignore")
    fd, tmp = tempfile.mkstemp(prefix=f".{short}.", suffix=".tmp", dir=parent)  # < 100 bytes
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as fh:
            yield fh, tmp
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(tmp, target.stat().st_mode & 0o777 if target.exists() else 0o644 & ~current_umask())
        except OSError:
            pass
    except BaseException:
        _unlink(tmp)
        raise


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


def current_umask() -> int:
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
    from oracle.textsafe import stdout_text

    sys.stdout.write(stdout_text(text))  # a failure here is reported by the command group (one line, exit 2)
    sys.stdout.flush()


@contextlib.contextmanager
def sink(output: str | Path | None) -> Iterator:
    """A context giving ``write(text)`` for output written as it is made (issue 29: a
    sweep a run of GPU counts at a time): to standard output as the text comes, or to a
    temporary file next to ``-o FILE`` renamed over it once the block ends (as
    :func:`write_file`: an error leaves the old file)."""
    if output is None or str(output) == "-":
        yield lambda text: write_stdout(text) if text else None
        return
    shown, target, writing, tmp = str(output), check_target(output), False, ""
    try:
        with _temp(target, "w") as (fh, tmp):
            writing = True
            yield _guarded(fh.write, shown)
            writing = False
        os.replace(tmp, target)
    except OSError as exc:  # creating, writing, flushing or renaming the file (not the caller's own)
        if writing:
            raise
        if tmp:
            _unlink(tmp)
        raise _error(shown, exc) from None


def _guarded(write, shown: str):
    """``write`` whose OSError (a full disk) is -o's one error line naming the file."""

    def guarded(text: str) -> None:
        try:
            write(text)
        except OSError as exc:
            raise _error(shown, exc) from None

    return guarded


def emit(text: str, output: str | Path | None) -> None:
    """Print to stdout, or write atomically to ``output``."""
    if output is None or str(output) == "-":
        write_stdout(text)
    else:
        write_file(output, text)


@contextlib.contextmanager
def append_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock (fcntl.flock on the folder of ``path``) while a command
    reads ``path`` and writes it back, so that concurrent appenders keep every row:
    the file itself is replaced by a rename, so the lock is on its folder."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows): no locking
        yield
        return
    parent = Path(os.path.realpath(path)).parent
    try:
        fd = os.open(parent, os.O_RDONLY)
    except OSError:
        yield  # a missing folder: check_target reports it
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
