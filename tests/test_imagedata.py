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
    assert [k for k, _ in recs][:5] == ["circle/000000.jpg", "square/000001.jpg",
                                        "triangle/000002.jpg", "cross/000003.jpg",
                                        "circle/000004.jpg"]
    assert [imagedata.label_of(k) for k, _ in recs] == [0, 1, 2, 3] * 2
    assert all(v[:2] == b"\xff\xd8" for _, v in recs)  # JPEG start-of-image marker
    png = list(imagedata.records(2, seed=1, size=24, fmt="png"))
    assert png[0][0] == "circle/000000.png" and png[0][1][:8] == b"\x89PNG\r\n\x1a\n"
    # PNG is lossless: it decodes to exactly the image that was drawn
    assert np.array_equal(imagedata.decode_pil(png[1][1]),
                          np.asarray(imagedata.make_image(1, seed=1, size=24)))
    assert list(imagedata.records(3, seed=1, size=24)) == recs[:3]


@pytest.mark.parametrize("name", sorted(imagedata.DECODERS))
def test_decoders_agree_on_jpeg(name):
    (_, jpeg), = imagedata.records(1, size=48)
    ref = imagedata.decode_pil(jpeg)
    out = imagedata.DECODERS[name](jpeg)
    assert out.shape == (48, 48, 3) and out.dtype == np.uint8
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 8  # same libjpeg family, IDCTs differ


@pytest.mark.filterwarnings("error")
def test_to_sample_gives_chw_uint8_and_label():
    (key, value), = imagedata.records(1, size=20)
    x, y = imagedata.to_sample(key, value)
    assert x.shape == (3, 20, 20) and x.dtype == torch.uint8 and y == 0
    x2, _ = imagedata.to_sample(key, value, imagedata.decode_simplejpeg)
    assert x2.shape == x.shape


def test_argument_errors():
    with pytest.raises(ValueError, match="index must be an integer >= 0"):
        imagedata.make_image(-1)
    with pytest.raises(ValueError, match="size must be an integer >= 16"):
        imagedata.make_image(0, size=8)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        imagedata.make_image(0, seed=-3)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        imagedata.records(0)
    with pytest.raises(ValueError, match="format must be one of"):
        imagedata.records(1, fmt="gif")
    with pytest.raises(ValueError, match="quality must be an integer in 1..95"):
        imagedata.records(1, quality=100)
    with pytest.raises(ValueError, match="not in a class folder"):
        imagedata.label_of("dog/1.jpg")
    with pytest.raises(ValueError, match="not a decodable image"):
        imagedata.decode_opencv(b"not an image")
