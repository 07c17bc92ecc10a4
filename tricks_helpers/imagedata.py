"""A synthetic image classification data set made on the spot (introduced in chapter 03).

Images with real content, so that encoders and decoders do real work: a colour gradient
background, one filled shape that gives the class (circle, square, triangle, cross), a few
random characters drawn with PIL, and Gaussian noise. Nothing is downloaded.

Guarantees:

- image ``i`` depends only on ``(seed, i)`` (its own ``numpy`` generator), so any subset can
  be made in any order, in any process, and is identical every time; the global numpy,
  Python and torch generators are never touched;
- classes are balanced: image ``i`` has class ``i % len(CLASSES)``;
- :func:`records` yields ``(key, bytes)`` pairs keyed ``"<class>/<index>.<ext>"``, ready for
  :func:`tricks_helpers.storage.write` (class folders in the ``"folder"`` format);
- the decoders in :data:`DECODERS` all return an ``H x W x 3`` RGB ``uint8`` array.
"""

from __future__ import annotations

import functools
import io
from typing import Callable, Iterator

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFont

__all__ = ["CLASSES", "make_image", "records", "label_of", "encode", "DECODERS",
           "decode_pil", "decode_opencv", "decode_simplejpeg", "to_sample"]

#: The class names; image ``i`` shows a ``CLASSES[i % 4]``.
CLASSES = ("circle", "square", "triangle", "cross")
_EXT = {"jpeg": "jpg", "png": "png"}
_TEXT = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


@functools.lru_cache(maxsize=1)
def _font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default()


def _check_int(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")


def make_image(index: int, *, seed: int = 0, size: int = 64) -> Image.Image:
    """Draw image ``index`` of the data set with base seed ``seed``.

    Args:
        index: image number (>= 0); its class is ``CLASSES[index % len(CLASSES)]``.
        seed: base seed (>= 0).
        size: width and height in pixels (>= 16).

    Returns:
        An RGB :class:`PIL.Image.Image` of ``size x size`` pixels.

    Raises:
        ValueError: on a negative index or seed, or a size below 16.
    """
    _check_int("index", index, 0)
    _check_int("seed", seed, 0)
    _check_int("size", size, 16)
    rng = np.random.default_rng([seed, index])
    # background: a linear gradient between two random colours, at a random angle
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    angle = rng.uniform(0, 2 * np.pi)
    ramp = np.linspace(0.0, 1.0, size, dtype=np.float32)
    t = np.float32(np.cos(angle)) * ramp[None, :] + np.float32(np.sin(angle)) * ramp[:, None]
    t = (t - t.min()) / max(float(t.max() - t.min()), 1e-6)
    grad = c0.astype(np.float32) + (c1 - c0).astype(np.float32) * t[..., None]
    img = Image.fromarray(grad.astype(np.uint8), "RGB")
    draw = ImageDraw.Draw(img)
    # a few random characters, in the background
    font = _font()
    for _ in range(int(rng.integers(1, 4))):
        text = "".join(_TEXT[int(j)] for j in rng.integers(0, len(_TEXT), int(rng.integers(2, 5))))
        xy = tuple(int(v) for v in rng.integers(0, size - 8, 2))
        draw.text(xy, text, fill=tuple(int(v) for v in rng.integers(0, 256, 3)), font=font)
    # the class shape
    cls = CLASSES[index % len(CLASSES)]
    r = rng.uniform(0.18, 0.35) * size
    cx, cy = rng.uniform(r, size - r, 2)
    colour = tuple(int(v) for v in rng.integers(0, 256, 3))
    if cls == "circle":
        draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour)
    elif cls == "square":
        draw.rectangle([cx - r, cy - r, cx + r, cy + r], fill=colour)
    elif cls == "triangle":
        draw.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
    else:
        w = r / 3
        draw.rectangle([cx - r, cy - w, cx + r, cy + w], fill=colour)
        draw.rectangle([cx - w, cy - r, cx + w, cy + r], fill=colour)
    # sensor-like noise
    noise = rng.standard_normal((size, size, 3), dtype=np.float32) * np.float32(rng.uniform(2, 12))
    arr = np.asarray(img, dtype=np.float32) + noise
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8), "RGB")


def encode(img: Image.Image, fmt: str = "jpeg", quality: int = 90) -> bytes:
    """Encode a PIL image as ``"jpeg"`` (at ``quality``) or ``"png"`` bytes.

    Raises:
        ValueError: on an unknown format or a quality outside 1..95.
    """
    if fmt not in _EXT:
        raise ValueError(f"encode: format must be one of {sorted(_EXT)}, got {fmt!r}")
    if isinstance(quality, bool) or not isinstance(quality, int) or not 1 <= quality <= 95:
        raise ValueError(f"encode: quality must be an integer in 1..95, got {quality!r}")
    buf = io.BytesIO()
    if fmt == "jpeg":
        img.save(buf, format="JPEG", quality=quality)
    else:
        img.save(buf, format="PNG")
    return buf.getvalue()


def records(n: int, *, seed: int = 0, size: int = 64, fmt: str = "jpeg",
            quality: int = 90) -> Iterator[tuple[str, bytes]]:
    """Yield ``n`` encoded images as ``("<class>/<index:06d>.<ext>", bytes)`` pairs.

    Args:
        n: number of images (>= 1).
        seed, size: as in :func:`make_image`.
        fmt: ``"jpeg"`` or ``"png"``.
        quality: JPEG quality.

    Raises:
        ValueError: on bad arguments (checked before the first image is made).
    """
    _check_int("n", n, 1)
    if fmt not in _EXT:
        raise ValueError(f"records: format must be one of {sorted(_EXT)}, got {fmt!r}")
    encode(Image.new("RGB", (1, 1)), fmt, quality)  # validates quality up front
    _check_int("seed", seed, 0)
    _check_int("size", size, 16)

    def gen() -> Iterator[tuple[str, bytes]]:
        for i in range(n):
            key = f"{CLASSES[i % len(CLASSES)]}/{i:06d}.{_EXT[fmt]}"
            yield key, encode(make_image(i, seed=seed, size=size), fmt, quality)

    return gen()


def label_of(key: str) -> int:
    """Class index of a key made by :func:`records` (its folder name).

    Raises:
        ValueError: if the key's folder is not one of :data:`CLASSES`.
    """
    folder = key.split("/", 1)[0]
    if folder not in CLASSES:
        raise ValueError(f"label_of: {key!r} is not in a class folder {CLASSES}")
    return CLASSES.index(folder)


def decode_pil(data: bytes) -> np.ndarray:
    """Decode JPEG/PNG bytes with PIL (``Image.open`` is lazy; ``np.array`` forces the decode)."""
    with Image.open(io.BytesIO(data)) as im:
        return np.array(im.convert("RGB"))


def decode_opencv(data: bytes) -> np.ndarray:
    """Decode JPEG/PNG bytes with OpenCV (BGR converted to RGB)."""
    import cv2

    arr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if arr is None:
        raise ValueError("decode_opencv: not a decodable image")
    return cv2.cvtColor(arr, cv2.COLOR_BGR2RGB)


def decode_simplejpeg(data: bytes) -> np.ndarray:
    """Decode JPEG bytes with simplejpeg (libjpeg-turbo, JPEG only)."""
    import simplejpeg

    return simplejpeg.decode_jpeg(data, colorspace="RGB")


#: Name -> decoder; all return ``H x W x 3`` RGB ``uint8``.
DECODERS: dict[str, Callable[[bytes], np.ndarray]] = {
    "PIL": decode_pil, "OpenCV": decode_opencv, "simplejpeg": decode_simplejpeg,
}


def to_sample(key: str, value: bytes,
              decoder: Callable[[bytes], np.ndarray] = decode_pil) -> tuple[torch.Tensor, int]:
    """Turn a stored record into ``(C x H x W uint8 tensor, label)``, a training sample.

    Use as a storage dataset ``transform`` (see :mod:`tricks_helpers.storage`).
    """
    arr = decoder(value)
    if not (arr.flags.writeable and arr.flags.c_contiguous):
        arr = np.array(arr)
    x = torch.from_numpy(arr).permute(2, 0, 1)
    return x, label_of(key)
