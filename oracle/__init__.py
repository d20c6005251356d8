"""oracle: project the performance of parallel CNN training before booking the GPUs.

Kept import-light (the CLI must start fast): the API is loaded on first use.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["predict", "load_model", "load_system", "load_profile", "OracleError", "__version__"]


def __getattr__(name: str):  # PEP 562 lazy attributes
    if name == "predict":
        from oracle.api import predict

        return predict
    if name in ("load_model", "load_system", "load_profile"):
        import oracle.load as load

        return getattr(load, name)
    if name == "OracleError":
        from oracle.errors import OracleError

        return OracleError
    raise AttributeError(f"module 'oracle' has no attribute {name!r}")
