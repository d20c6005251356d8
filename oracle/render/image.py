"""A matplotlib figure as PNG, SVG or PDF bytes: reproducible (no timestamps), bounded in
size (a PNG of more than MAX_PIXELS is refused before it is drawn) and, below
PALETTE_MAX_PIXELS, compacted to a 256-colour palette."""

from __future__ import annotations

import io
import struct

from oracle.errors import OracleError

MAX_PIXELS = 200 * 10**6  # a PNG beyond this needs gigabytes to draw; nobody wants one
PALETTE_MAX_PIXELS = 50 * 10**6  # below PIL's decompression-bomb limit (89 million)


# what `oracle plot` can do about an image too large: its own options
PLOT_WAY_OUT = ("--dpi", "lower --dpi, plot fewer GPU counts, or write SVG")


def encode(fig, fmt: str, dpi: int, rc: dict, compact: bool = True, way_out: tuple[str, str] = PLOT_WAY_OUT) -> bytes:
    """The figure as PNG or SVG bytes (no timestamps, so outputs are reproducible).
    ``compact`` PNGs are palette images (256 colours), about 4x smaller and visually
    the same for these flat-colour plots.  ``way_out``: (option, hint) of an image too
    large, the calling command's own options (issue 28)."""
    import matplotlib

    width, height = (int(x * dpi) for x in fig.get_size_inches())
    if fmt == "png" and (width * height > MAX_PIXELS or max(width, height) >= 2**16):
        raise OracleError(
            f"the image would be {width:,} x {height:,} pixels at {dpi} dpi; at most {MAX_PIXELS // 10**6} million",
            path=way_out[0], hint=way_out[1],
        )  # fmt: skip
    escape_controls(fig)
    buf = io.BytesIO()
    # no dates or producer versions: outputs are reproducible
    metadata = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None, "Producer": None}}[fmt]
    with matplotlib.rc_context(rc):
        fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", pad_inches=0.15, metadata=metadata)
    data = buf.getvalue()
    if fmt == "png" and compact:
        data = _palette_png(data)
    return data


def escape_controls(fig) -> None:
    """Every text of the figure (titles, labels, legends: names from the user's files)
    with its control characters shown as escapes (textsafe.terminal), as on a terminal."""
    from matplotlib.text import Text

    from oracle.textsafe import has_control, terminal

    for t in fig.findobj(Text):
        if has_control(t.get_text()):
            t.set_text(terminal(t.get_text()))


def _palette_png(data: bytes) -> bytes:
    try:
        from PIL import Image  # a dependency of matplotlib
    except ImportError:  # pragma: no cover
        return data
    width, height = struct.unpack(">II", data[16:24])  # the PNG header, before any decoding
    if width * height > PALETTE_MAX_PIXELS:  # large images: keep matplotlib's PNG as it is
        return data
    image = Image.open(io.BytesIO(data)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(out, format="PNG", optimize=True)
    return out.getvalue() if out.tell() < len(data) else data
