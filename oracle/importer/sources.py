"""Resolve an import SOURCE to a PyTorch module (docs/cli.md ``oracle import-model``).

``torchvision:NAME`` (also ``torchvision:video.r3d_18``, ``torchvision:segmentation.
fcn_resnet50``), ``timm:NAME``, ``path/to/file.py:CALLABLE``, ``package.module:CALLABLE``.
Models are built without weights (``weights=None``, ``weights_backbone=None`` where the
builder has it): nothing is downloaded.  Parameters live on the ``meta`` device, so
building even a large model allocates nothing."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import io
import sys
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from oracle.errors import OracleError


@dataclass(frozen=True)
class Built:
    module: object  # torch.nn.Module
    source: str  # as given
    description: str  # what was imported from where, for the file's header


def need(package: str, extra: str, source: str):
    """Import ``package`` or stop with the extra that provides it."""
    try:
        return importlib.import_module(package)
    except ImportError:
        raise OracleError(
            f"needs the Python package '{package}', which is not installed",
            file=source,
            hint=f"install it with: pip install 'oracle[{extra}]'",
        ) from None


def build(source: str) -> Built:
    kind, _, rest = source.rpartition(":")
    if not kind or not rest:
        raise OracleError(
            "is not an import source; expected torchvision:NAME, timm:NAME, FILE.py:CALLABLE,"
            " package.module:CALLABLE or FILE.onnx",
            file=source,
        )
    torch = need("torch", "torch", source)
    make = {"torchvision": _torchvision, "timm": _timm}.get(kind)
    try:
        with torch.device("meta"):  # no memory for the weights
            module, desc = make(source, rest) if make else _callable(source, kind, rest)
    except NotImplementedError:  # a builder computing with tensors (RegNet's widths)
        module, desc = make(source, rest) if make else _callable(source, kind, rest)
        if isinstance(module, torch.nn.Module):
            module = module.to("meta")
    if not isinstance(module, torch.nn.Module):
        raise OracleError(
            f"'{rest}' returned {type(module).__name__}, not a torch.nn.Module", file=source
        )
    return Built(module.eval(), source, desc)


def _torchvision(source: str, name: str):
    tv = need("torchvision", "torch", source)
    sub, _, fn = name.rpartition(".")
    package = f"torchvision.models.{sub}" if sub else "torchvision.models"
    try:
        mod = importlib.import_module(package)
    except ImportError:
        raise OracleError(f"torchvision has no model package '{package}'", file=source) from None
    builder = getattr(mod, fn, None)
    if builder is None or not callable(builder):
        raise OracleError(f"{package} has no model '{fn}'", file=source)
    params = inspect.signature(builder).parameters
    kw = {k: None for k in ("weights", "weights_backbone") if k in params}
    return builder(**kw), f"{package}.{fn}({', '.join(f'{k}=None' for k in kw)}) of torchvision {tv.__version__}"


def _timm(source: str, name: str):
    timm = need("timm", "torch", source)
    try:
        module = timm.create_model(name, pretrained=False)
    except RuntimeError as exc:  # timm: "Unknown model (...)"
        raise OracleError(str(exc), file=source) from None
    return module, f"timm.create_model({name!r}, pretrained=False) of timm {timm.__version__}"


def _callable(source: str, where: str, attr: str):
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise OracleError("no such file", file=where)
        spec = importlib.util.spec_from_file_location(f"_oracle_import_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses and pickling look modules up by name
        argv, sys.argv = sys.argv, [str(path)]  # a script's own argument parser sees no oracle options
        try:
            with captured() as said:  # argparse's usage, prints: never on oracle's output
                spec.loader.exec_module(mod)
        except SystemExit as exc:  # sys.exit() or argparse at the top level of the file
            raise OracleError(f"exited (status {exc.code!r}) while being imported{_last(said)}; expected a file"
                              " that defines the model and leaves running to `if __name__ == '__main__':`",
                              file=where) from None  # fmt: skip
        except Exception as exc:
            raise OracleError(f"failed to run: {type(exc).__name__}: {exc}", file=where) from None
        finally:
            sys.argv = argv
        origin = f"{attr} of {path.name}"
    else:
        try:
            mod = importlib.import_module(where)
        except ImportError as exc:
            raise OracleError(f"cannot import module '{where}': {exc}", file=source) from None
        origin = f"{where}.{attr}"
    target = getattr(mod, attr, None)
    if target is None:
        raise OracleError(f"has no attribute '{attr}'", file=where)
    if not callable(target):
        raise OracleError(f"'{attr}' is not callable (got {type(target).__name__})", file=source)
    try:
        with captured() as said:
            return target(), f"{origin}()"
    except SystemExit as exc:
        raise OracleError(f"calling '{attr}()' exited (status {exc.code!r}){_last(said)}", file=source) from None
    except Exception as exc:
        raise OracleError(f"calling '{attr}()' failed: {type(exc).__name__}: {exc}", file=source) from None


@contextmanager
def captured():
    """What the user's code prints to standard output and error, kept from oracle's own
    (the YAML may go to standard output; a script's argparse prints its usage, issue 28)."""
    buf = io.StringIO()
    with redirect_stdout(buf), redirect_stderr(buf):
        yield buf


def _last(said: io.StringIO) -> str:
    """The last line the code printed, for the error line (argparse's reason)."""
    lines = [line.strip() for line in said.getvalue().splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1] if len(lines[-1]) <= 200 else lines[-1][:200] + "..."
    return f" (it printed: {last!r})"
