"""Writing output: to stdout, or atomically to a file (temporary file, then rename),
so that an error or an interrupt never leaves a partial file or clobbers the old one."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from oracle.errors import OracleError


def atomic_write(path: str | Path, data: str | bytes) -> None:
    target = Path(path)
    if target.is_dir():
        raise OracleError("is a directory; expected a file to write", file=str(path), path="-o")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise OracleError(f"folder '{parent}' does not exist", file=str(path), path="-o")
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": ""})) as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if target.exists():
            try:
                os.chmod(tmp, target.stat().st_mode & 0o777)
            except OSError:
                pass
        else:
            os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_file(path: str | Path, data: str | bytes) -> None:
    """Write atomically; a file-system problem is a user-facing error naming the file."""
    try:
        atomic_write(path, data)
    except PermissionError:
        raise OracleError("permission denied", file=str(path), path="-o") from None
    except OSError as exc:
        raise OracleError(f"cannot write: {exc.strerror or exc}", file=str(path), path="-o") from None


def emit(text: str, output: str | Path | None) -> None:
    """Print to stdout, or write atomically to ``output``."""
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        write_file(output, text)
