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
  :func:`tricks_helpers.storage.write` (class folders in the ``"folder"`` format), encoded as
  JPEG, PNG or BMP (uncompressed: its decode is a copy);
- the decoders in :data:`DECODERS` all return an ``H x W x 3`` RGB ``uint8`` array, and raise
  ``ValueError`` on bytes that are not an image (``TypeError`` on a non-bytes argument);
- :func:`augment_pil` (one image at a time, PIL) and :func:`augment_batch` (a whole batch,
  tensor ops) apply the same random crop and flip and return identical pixels for the same
  parameters (:func:`augment_params`);
- :func:`count_pillow_decodes` counts the images Pillow actually decodes inside a block.

Argument errors follow the package policy: wrong type ``TypeError``, wrong value ``ValueError``.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable, Iterator

import numpy as np
import torch
from PIL import Image, ImageDraw, ImageFile, ImageFont

from tricks_helpers._checks import check_choice, check_int, check_type

__all__ = [
    "CLASSES",
    "make_image",
    "records",
    "label_of",
    "encode",
    "DECODERS",
    "decode_pil",
    "decode_opencv",
    "decode_simplejpeg",
    "to_sample",
    "augment_params",
    "augment_pil",
    "augment_batch",
    "count_pillow_decodes",
]

#: The class names; image ``i`` shows a ``CLASSES[i % 4]``.
CLASSES = ("circle", "square", "triangle", "cross")
_EXT = {"jpeg": "jpg", "png": "png", "bmp": "bmp"}
_TEXT = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


@functools.lru_cache(maxsize=1)
def _font() -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default()


def make_image(index: int, *, seed: int = 0, size: int = 64) -> Image.Image:
    """Draw image ``index`` of the data set with base seed ``seed``.

    Args:
        index: image number (>= 0); its class is ``CLASSES[index % len(CLASSES)]``.
        seed: base seed (>= 0).
        size: width and height in pixels (>= 16).

    Returns:
        An RGB :class:`PIL.Image.Image` of ``size x size`` pixels.

    Raises:
        TypeError: on non-integer arguments.
        ValueError: on a negative index or seed, or a size below 16.
    """
    check_int("make_image", "index", index, minimum=0)
    check_int("make_image", "seed", seed, minimum=0)
    check_int("make_image", "size", size, minimum=16)
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
    """Encode a PIL image as ``"jpeg"`` (at ``quality``), ``"png"`` or ``"bmp"`` bytes.

    Raises:
        TypeError: on a non-image or a non-integer quality.
        ValueError: on an unknown format or a quality outside 1..95.
    """
    check_type("encode", "img", img, Image.Image)
    check_choice("encode", "fmt", fmt, tuple(_EXT))
    check_int("encode", "quality", quality, minimum=1, maximum=95)
    buf = io.BytesIO()
    if fmt == "jpeg":
        img.save(buf, format="JPEG", quality=quality)
    else:
        img.save(buf, format=fmt.upper())
    return buf.getvalue()


def records(
    n: int, *, seed: int = 0, size: int = 64, fmt: str = "jpeg", quality: int = 90
) -> Iterator[tuple[str, bytes]]:
    """Yield ``n`` encoded images as ``("<class>/<index:06d>.<ext>", bytes)`` pairs.

    Args:
        n: number of images (>= 1).
        seed, size: as in :func:`make_image`.
        fmt: ``"jpeg"``, ``"png"`` or ``"bmp"``.
        quality: JPEG quality.

    Raises:
        TypeError, ValueError: on bad arguments (checked before the first image is made).
    """
    check_int("records", "n", n, minimum=1)
    check_choice("records", "fmt", fmt, tuple(_EXT))
    check_int("records", "quality", quality, minimum=1, maximum=95)
    check_int("records", "seed", seed, minimum=0)
    check_int("records", "size", size, minimum=16)

    def gen() -> Iterator[tuple[str, bytes]]:
        for i in range(n):
            key = f"{CLASSES[i % len(CLASSES)]}/{i:06d}.{_EXT[fmt]}"
            yield key, encode(make_image(i, seed=seed, size=size), fmt, quality)

    return gen()


def label_of(key: str) -> int:
    """Class index of a key made by :func:`records` (its folder name).

    Raises:
        TypeError: if the key is not a str.
        ValueError: if the key's folder is not one of :data:`CLASSES`.
    """
    check_type("label_of", "key", key, str)
    folder = key.split("/", 1)[0]
    if folder not in CLASSES:
        raise ValueError(f"label_of: {key!r} is not in a class folder {CLASSES}")
    return CLASSES.index(folder)


def _image_bytes(where: str, data: bytes) -> bytes:
    check_type(where, "data", data, (bytes, bytearray, memoryview))
    if len(data) == 0:
        raise ValueError(f"{where}: not a decodable image (0 bytes)")
    return bytes(data)


def decode_pil(data: bytes) -> np.ndarray:
    """Decode JPEG/PNG/BMP bytes with PIL (``Image.open`` is lazy; ``np.array`` decodes)."""
    data = _image_bytes("decode_pil", data)
    try:
        with Image.open(io.BytesIO(data)) as im:
            return np.array(im.convert("RGB"))
    except (OSError, SyntaxError) as exc:  # PIL.UnidentifiedImageError is an OSError
        raise ValueError(f"decode_pil: not a decodable image ({type(exc).__name__})") from None


def decode_opencv(data: bytes) -> np.ndarray:
    """Decode JPEG/PNG/BMP bytes with OpenCV (BGR converted to RGB)."""
    import cv2

    data = _image_bytes("decode_opencv", data)
    arr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if arr is None:
        raise ValueError("decode_opencv: not a decodable image")
    return cv2.cvtColor(arr, cv2.COLOR_BGR2RGB)


def decode_simplejpeg(data: bytes) -> np.ndarray:
    """Decode JPEG bytes with simplejpeg (libjpeg-turbo, JPEG only)."""
    import simplejpeg

    data = _image_bytes("decode_simplejpeg", data)
    try:
        return simplejpeg.decode_jpeg(data, colorspace="RGB")
    except ValueError:
        raise ValueError("decode_simplejpeg: not a decodable JPEG image") from None


#: Name -> decoder; all return ``H x W x 3`` RGB ``uint8``.
DECODERS: dict[str, Callable[[bytes], np.ndarray]] = {
    "PIL": decode_pil,
    "OpenCV": decode_opencv,
    "simplejpeg": decode_simplejpeg,
}


def to_sample(
    key: str, value: bytes, decoder: Callable[[bytes], np.ndarray] = decode_pil
) -> tuple[torch.Tensor, int]:
    """Turn a stored record into ``(C x H x W uint8 tensor, label)``, a training sample.

    Use as a storage dataset ``transform`` (see :mod:`tricks_helpers.storage`).
    """
    arr = decoder(value)
    if not (arr.flags.writeable and arr.flags.c_contiguous):
        arr = np.array(arr)
    x = torch.from_numpy(arr).permute(2, 0, 1)
    return x, label_of(key)


def augment_params(
    n: int, size: int, pad: int, *, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, ...]:
    """Random crop offsets and flips for ``n`` images: ``(tops, lefts, flips)``.

    ``tops``/``lefts`` are in ``[0, 2 * pad]`` (a ``size x size`` crop of the image padded by
    ``pad`` zeros on each side), ``flips`` are booleans (mirror left-right).

    Raises:
        TypeError, ValueError: on bad counts (``n >= 1``, ``size >= 1``, ``pad >= 0``).
    """
    check_int("augment_params", "n", n, minimum=1)
    check_int("augment_params", "size", size, minimum=1)
    check_int("augment_params", "pad", pad, minimum=0)
    offsets = torch.randint(0, 2 * pad + 1, (2, n), generator=generator)
    flips = torch.randint(0, 2, (n,), generator=generator).bool()
    return offsets[0], offsets[1], flips


def augment_pil(img: Image.Image, top: int, left: int, flip: bool, pad: int) -> Image.Image:
    """Per-sample augmentation with PIL: pad with zeros, crop back to size, maybe mirror."""
    w, h = img.size
    padded = Image.new(img.mode, (w + 2 * pad, h + 2 * pad))
    padded.paste(img, (pad, pad))
    out = padded.crop((left, top, left + w, top + h))
    return out.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if flip else out


def augment_batch(
    x: torch.Tensor, tops: torch.Tensor, lefts: torch.Tensor, flips: torch.Tensor, pad: int
) -> torch.Tensor:
    """The same augmentation for a whole ``N x C x H x W`` batch, with a few tensor ops.

    Pads the batch once, takes every image's crop with one indexing operation over the
    batch's sliding windows (``unfold`` makes views, not copies), then mirrors the flipped
    ones with one ``torch.where``: the number of operations does not grow with the batch
    size, and the same code runs on a GPU when ``x`` lives there.
    """
    n, _, h, w = x.shape
    dev = x.device
    windows = torch.nn.functional.pad(x, (pad, pad, pad, pad)).unfold(2, h, 1).unfold(3, w, 1)
    crops = windows[torch.arange(n, device=dev), :, tops.to(dev), lefts.to(dev)]  # N C H W
    return torch.where(flips.to(dev)[:, None, None, None], crops.flip(3), crops)


class _DecodeCount:
    def __init__(self) -> None:
        self.count = 0


@contextlib.contextmanager
def count_pillow_decodes() -> Iterator[_DecodeCount]:
    """Count the images Pillow decodes inside the block (this process only).

    A decode is a call of ``ImageFile.load`` with pixel data still to decode (``Image.open``
    alone only reads the header). Yields an object whose ``.count`` grows as images are
    decoded; the original ``load`` is restored on exit.
    """
    counter = _DecodeCount()
    original = ImageFile.ImageFile.load

    def load(self: ImageFile.ImageFile):  # type: ignore[no-untyped-def]
        if self.tile:
            counter.count += 1
        return original(self)

    ImageFile.ImageFile.load = load  # type: ignore[method-assign]
    try:
        yield counter
    finally:
        ImageFile.ImageFile.load = original  # type: ignore[method-assign]
