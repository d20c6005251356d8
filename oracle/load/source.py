"""Opening input files: the one place every reader (YAML, CSV, JSON, logs, baselines,
overlays, layer-wise files) gets its bytes from.

* Only regular files are read.  A device (``/dev/zero``), a FIFO or a socket is refused
  before it is opened, so nothing blocks and nothing reads forever; ``ORACLE_READ_PIPES=1``
  lets pipes and character devices through (``-m <(generate-model)``), still capped.
* At most :data:`MAX_INPUT_BYTES` (256 MiB: a CSV of millions of runs) are read, of a
  YAML file at most :data:`MAX_YAML_BYTES` (16 MiB); a larger file is refused.
* Every file read is remembered (device and inode) so that ``-o`` can refuse to
  overwrite an input of the same command (:func:`is_input`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from oracle.errors import OracleError

MAX_INPUT_BYTES = 256 * 2**20  # CSVs and logs: room for millions of runs or steps
MAX_YAML_BYTES = 16 * 2**20  # models, systems, profiles: real ones are below 1 MiB
PIPES_ENV = "ORACLE_READ_PIPES"

_inputs: set[tuple[int, int]] = set()


def shown(path: str | Path) -> str:
    """A path as shown in messages (very long names shortened)."""
    s = str(path)
    return s if len(s) <= 200 else s[:197] + "..."


def forget_inputs() -> None:
    """Start a new command: no file has been read yet."""
    _inputs.clear()


def is_input(st: os.stat_result) -> bool:
    """Whether the file with this stat was read as an input of the running command."""
    return (st.st_dev, st.st_ino) in _inputs


def remember_named(*paths) -> None:
    """Note as inputs the files a command names without reading them (``oracle import
    -m FILE`` writes the path into its rows): -o must not replace them either."""
    for path in paths:
        try:
            st = os.stat(path) if path else None
        except (OSError, ValueError):
            continue
        if st is not None and stat.S_ISREG(st.st_mode):
            _inputs.add((st.st_dev, st.st_ino))


def release(path: str | Path) -> None:
    """Let ``-o`` replace this input (``oracle import --append`` rewrites the CSV it read)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    _inputs.discard((st.st_dev, st.st_ino))


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _stat(path: Path, name: str, what: str) -> os.stat_result:
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise OracleError(f"{what} does not exist", file=name) from None
    except PermissionError:
        raise OracleError(f"cannot read {what}: permission denied (on the file or a folder above it)",
                          file=name) from None
    except (OSError, ValueError):  # a name no file system accepts (too long, NUL byte), a loop
        raise OracleError(f"{what} does not exist", file=name) from None


def _too_large(name: str, what: str, limit: int) -> OracleError:
    return OracleError(f"is larger than {limit // 2**20} MiB; expected a {what}", file=name,
                       hint=f"oracle reads a {what} of at most {limit // 2**20} MiB")


def check_readable(path: str | Path, what: str = "file", remember: bool = False) -> os.stat_result:
    """The stat of ``path`` after refusing, before anything opens it, a folder and what is
    not a regular file (a FIFO would block, /dev/zero never ends); ``remember``: note it
    as an input (for a file another library then reads)."""
    name = shown(path)
    st = _stat(Path(path), name, what)
    if stat.S_ISDIR(st.st_mode):
        raise OracleError(f"is a directory; expected a {what}", file=name)
    pipes_ok = os.environ.get(PIPES_ENV, "") not in ("", "0")
    if not stat.S_ISREG(st.st_mode) and not (pipes_ok and (stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode))):
        raise OracleError(
            f"is {_kind(st.st_mode)}; expected a {what} (a regular file)",
            file=name, hint=f"{PIPES_ENV}=1 lets pipes and devices be read",
        )  # fmt: skip
    if remember:
        _inputs.add((st.st_dev, st.st_ino))
    return st


def read_bytes(path: str | Path, what: str = "file", limit: int | None = None) -> bytes:
    """The bytes of a regular input file, every OS problem turned into an OracleError;
    more than ``limit`` bytes (default MAX_INPUT_BYTES) is an error."""
    limit = MAX_INPUT_BYTES if limit is None else limit
    p = Path(path)
    name = shown(path)
    st = check_readable(path, what)
    regular = stat.S_ISREG(st.st_mode)
    if regular and st.st_size > limit:
        raise _too_large(name, what, limit)
    try:
        # O_NONBLOCK: should the file have been swapped for a FIFO since the stat above,
        # opening it must not wait for a writer (the fstat below then refuses it)
        fd = os.open(p, os.O_RDONLY | (0 if not regular else getattr(os, "O_NONBLOCK", 0)))
    except PermissionError:
        raise OracleError(f"cannot read {what}: permission denied", file=name) from None
    except OSError as exc:
        raise OracleError(f"cannot read {what}: {exc.strerror or exc}", file=name) from None
    with os.fdopen(fd, "rb") as fh:
        st2 = os.fstat(fh.fileno())
        if regular and not stat.S_ISREG(st2.st_mode):
            raise OracleError(f"is {_kind(st2.st_mode)}; expected a {what} (a regular file)", file=name)
        try:
            data = _read_capped(fh, limit)
        except OSError as exc:
            raise OracleError(f"cannot read {what}: {exc.strerror or exc}", file=name) from None
    if len(data) > limit:
        raise _too_large(name, what, limit)
    _inputs.add((st2.st_dev, st2.st_ino))
    return data


def _read_capped(fh, limit: int) -> bytes:
    chunks = []
    left = limit + 1
    while left > 0:
        chunk = fh.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def parse_json(text: str, name: str, *, allow_nan: bool = True):
    """JSON text to Python values; syntax errors, nesting too deep and (unless allowed)
    NaN/Infinity are OracleErrors naming the file and line."""
    import json

    def refuse(constant: str):
        raise OracleError(f"{constant} is not a number oracle accepts here", file=name)

    try:
        return json.loads(text, **({} if allow_nan else {"parse_constant": refuse}))
    except json.JSONDecodeError as exc:
        raise OracleError(f"invalid JSON: {exc.msg}", file=name, line=exc.lineno) from None
    except RecursionError:
        raise OracleError("JSON is nested too deeply", file=name) from None
    except ValueError as exc:  # e.g. an integer with too many digits
        raise OracleError(f"JSON value cannot be read: {exc}", file=name) from None
