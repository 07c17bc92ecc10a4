"""Tests of tricks_helpers.imagedata: determinism, balance, encoders and decoders."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from tricks_helpers import imagedata


def test_images_are_deterministic_and_independent_of_order_and_global_seeds():
    a = [np.asarray(imagedata.make_image(i, seed=5, size=32)) for i in range(6)]
    np.random.seed(123)
    random.seed(123)
    torch.manual_seed(123)
    b = [np.asarray(imagedata.make_image(i, seed=5, size=32)) for i in reversed(range(6))][::-1]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = np.asarray(imagedata.make_image(0, seed=6, size=32))
    assert not np.array_equal(a[0], c)
    assert a[0].shape == (32, 32, 3) and a[0].dtype == np.uint8
    assert a[0].std() > 5  # real content, not a flat colour


def test_making_images_leaves_global_generators_alone():
    np.random.seed(0)
    expected = np.random.random()
    np.random.seed(0)
    imagedata.make_image(3)
    assert np.random.random() == expected


def test_records_keys_classes_and_formats():
    recs = list(imagedata.records(8, seed=1, size=24))
    assert [k for k, _ in recs][:5] == [
        "circle/000000.jpg",
        "square/000001.jpg",
        "triangle/000002.jpg",
        "cross/000003.jpg",
        "circle/000004.jpg",
    ]
    assert [imagedata.label_of(k) for k, _ in recs] == [0, 1, 2, 3] * 2
    assert all(v[:2] == b"\xff\xd8" for _, v in recs)  # JPEG start-of-image marker
    png = list(imagedata.records(2, seed=1, size=24, fmt="png"))
    assert png[0][0] == "circle/000000.png" and png[0][1][:8] == b"\x89PNG\r\n\x1a\n"
    # PNG is lossless: it decodes to exactly the image that was drawn
    assert np.array_equal(
        imagedata.decode_pil(png[1][1]), np.asarray(imagedata.make_image(1, seed=1, size=24))
    )
    assert list(imagedata.records(3, seed=1, size=24)) == recs[:3]


@pytest.mark.parametrize("name", sorted(imagedata.DECODERS))
def test_decoders_agree_on_jpeg(name):
    ((_, jpeg),) = imagedata.records(1, size=48)
    ref = imagedata.decode_pil(jpeg)
    out = imagedata.DECODERS[name](jpeg)
    assert out.shape == (48, 48, 3) and out.dtype == np.uint8
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 8  # same libjpeg family, IDCTs differ


@pytest.mark.filterwarnings("error")
def test_to_sample_gives_chw_uint8_and_label():
    ((key, value),) = imagedata.records(1, size=20)
    x, y = imagedata.to_sample(key, value)
    assert x.shape == (3, 20, 20) and x.dtype == torch.uint8 and y == 0
    x2, _ = imagedata.to_sample(key, value, imagedata.decode_simplejpeg)
    assert x2.shape == x.shape


def test_argument_errors():
    with pytest.raises(ValueError, match="make_image: index must be an integer >= 0"):
        imagedata.make_image(-1)
    with pytest.raises(TypeError, match="make_image: index must be an integer"):
        imagedata.make_image("1")
    with pytest.raises(ValueError, match="size must be an integer >= 16"):
        imagedata.make_image(0, size=8)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        imagedata.make_image(0, seed=-3)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        imagedata.records(0)
    with pytest.raises(TypeError, match="records: n must be an integer"):
        imagedata.records(2.0)
    with pytest.raises(ValueError, match="fmt must be one of"):
        imagedata.records(1, fmt="gif")
    with pytest.raises(ValueError, match="quality must be an integer in \\[1, 95\\]"):
        imagedata.records(1, quality=100)
    with pytest.raises(ValueError, match="not in a class folder"):
        imagedata.label_of("dog/1.jpg")
    with pytest.raises(TypeError, match="label_of: key must be str"):
        imagedata.label_of(3)
    with pytest.raises(TypeError, match="encode: img must be Image"):
        imagedata.encode(np.zeros((4, 4, 3), np.uint8))


@pytest.mark.parametrize("name", sorted(imagedata.DECODERS))
@pytest.mark.parametrize(
    "data, exc, match",
    [
        (b"", ValueError, "not a decodable image \\(0 bytes\\)"),
        (b"not an image", ValueError, "not a decodable"),
        ("text", TypeError, "data must be bytes or bytearray or memoryview"),
    ],
)
def test_decoders_refuse_what_is_not_an_image(name, data, exc, match):
    with pytest.raises(exc, match=f"decode_.*: {match}"):
        imagedata.DECODERS[name](data)


def test_bmp_is_uncompressed_and_decodes_exactly():
    ((key, bmp),) = imagedata.records(1, size=32, fmt="bmp")
    assert key == "circle/000000.bmp" and bmp[:2] == b"BM"
    assert len(bmp) == 54 + 32 * 32 * 3  # header + pixels, nothing to decompress
    assert np.array_equal(imagedata.decode_pil(bmp), np.asarray(imagedata.make_image(0, size=32)))
    assert np.array_equal(imagedata.decode_opencv(bmp), imagedata.decode_pil(bmp))


@pytest.mark.parametrize("n, pad", [(1, 0), (7, 4), (16, 2)])
def test_batched_augmentation_equals_per_sample_pil(n, pad):
    imgs = [imagedata.make_image(i, size=24) for i in range(n)]
    x = torch.stack([torch.from_numpy(np.array(im)).permute(2, 0, 1) for im in imgs])
    tops, lefts, flips = imagedata.augment_params(
        n, 24, pad, generator=torch.Generator().manual_seed(n)
    )
    assert int(tops.max()) <= 2 * pad and int(lefts.min()) >= 0
    batched = imagedata.augment_batch(x, tops, lefts, flips, pad)
    one_by_one = torch.stack(
        [
            torch.from_numpy(
                np.array(imagedata.augment_pil(im, int(t), int(le), bool(f), pad))
            ).permute(2, 0, 1)
            for im, t, le, f in zip(imgs, tops, lefts, flips)
        ]
    )
    assert torch.equal(batched, one_by_one)
    with pytest.raises(ValueError, match="augment_params: pad must be an integer >= 0"):
        imagedata.augment_params(n, 24, -1)


def test_count_pillow_decodes_counts_real_decodes_only():
    import io

    from PIL import Image, ImageFile

    ((_, jpeg),) = imagedata.records(1, size=16)
    original = ImageFile.ImageFile.load
    with imagedata.count_pillow_decodes() as decodes:
        Image.open(io.BytesIO(jpeg))  # lazy: the header only
        assert decodes.count == 0
        imagedata.decode_pil(jpeg)
        im = Image.open(io.BytesIO(jpeg))
        im.load()
        im.load()  # already decoded: no second decode
    assert decodes.count == 2
    assert ImageFile.ImageFile.load is original
