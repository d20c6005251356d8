"""Per-layer timing profiles: measured with PyTorch, or estimated from a roofline.

- :mod:`oracle.profiling.torchnet` builds a ``torch.nn`` network from an oracle model,
- :mod:`oracle.profiling.measure` times each layer's forward, backward and weight update,
- :mod:`oracle.profiling.estimate` estimates the same times from FLOPs, bytes moved and
  the GPU's peak FLOP/s and memory bandwidth (no PyTorch needed).

PyTorch is an optional dependency (``pip install 'oracle[profile]'``): it is imported
only inside the measuring code, never when this package is imported.
"""

from __future__ import annotations

from oracle.errors import OracleError

TORCH_MISSING = "oracle profile needs PyTorch: pip install 'oracle[profile]'"


def require_torch():
    """Import and return :mod:`torch`, or raise the one-line 'needs PyTorch' error."""
    try:
        import torch
    except ImportError:
        raise OracleError(
            TORCH_MISSING, hint="or use --estimate --system S for a roofline estimate"
        ) from None
    return torch


__all__ = ["TORCH_MISSING", "require_torch"]
