"""Image folders and WebDataset tar shards, decoded and augmented by stoke's images module."""

import io
import tarfile

import numpy as np
import pytest

import stoke_loader as sl

Image = pytest.importorskip("PIL.Image")
pytestmark = pytest.mark.skipif(not sl._native.has_images, reason="built without images")


def pixels(seed: int, height: int = 8, width: int = 8, channels: int = 3) -> np.ndarray:
    shape = (height, width, channels) if channels == 3 else (height, width)
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def png_bytes(image: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format="PNG")
    return out.getvalue()


@pytest.fixture
def folder(tmp_path):
    """root/<class>/<k>.png: 3 classes of 4, 3 and 5 PNGs (lossless), and what each holds."""
    root = tmp_path / "folder"
    expected = []  # in the folder's order: (image, label)
    for label, (name, count) in enumerate((("ant", 4), ("bee", 3), ("cat", 5))):
        (root / name).mkdir(parents=True)
        for k in range(count):
            image = pixels(100 * label + k)
            (root / name / f"{k:02d}.png").write_bytes(png_bytes(image))
            expected.append((image, label))
    (root / "notes.txt").write_text("ignored: not in a class folder")
    return root, expected


def write_shard(path, samples, extra=None):
    """A WebDataset tar of (key, image bytes, label text) samples, plus ``extra`` members."""
    with tarfile.open(path, "w") as tar:
        for key, image, label in samples:
            for name, data in ((f"{key}.png", image), (f"{key}.cls", label.encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for name, data in (extra or {}).items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def shards(tmp_path):
    """Three tar shards of 5, 4 and 6 samples; sample i has label i % 10."""
    directory = tmp_path / "tars"
    directory.mkdir()
    expected, index = [], 0
    for s, count in enumerate((5, 4, 6)):
        samples = []
        for _ in range(count):
            image = pixels(index)
            samples.append((f"s{index:03d}", png_bytes(image), str(index % 10)))
            expected.append((image, index % 10))
            index += 1
        write_shard(directory / f"train-{s}.tar", samples)
    return directory, expected


def epoch_rows(loader):
    out = {}
    for batch in loader:
        images, labels = np.from_dlpack(batch["image"]), np.from_dlpack(batch["label"])
        for k, index in enumerate(batch.indices[batch.mask]):
            assert index not in out
            out[int(index)] = (images[k].copy(), int(labels[k]))
    return out


def test_image_folder_uint8_hwc_is_the_decoded_image(folder):
    root, expected = folder
    images = sl.image_folder(root, 8)
    assert images.classes == ["ant", "bee", "cat"] and images.num_samples == 12
    assert list(images) == ["image", "label"]
    loader = sl.Loader(images, batch_size=5, shuffle=True, seed=1, num_workers=2)
    batch = next(iter(loader))
    assert np.from_dlpack(batch["image"]).dtype == np.uint8
    assert np.from_dlpack(batch["image"]).shape == (5, 8, 8, 3)
    assert np.from_dlpack(batch["label"]).dtype == np.int32
    rows = epoch_rows(loader)
    assert sorted(rows) == list(range(12))
    for index, (image, label) in rows.items():
        np.testing.assert_array_equal(image, expected[index][0])
        assert label == expected[index][1]


def test_flip_center_crop_and_normalise(folder):
    root, expected = folder
    flipped = epoch_rows(sl.Loader(sl.image_folder(root, 8, flip=1.0), batch_size=4))
    for index, (image, _) in flipped.items():
        np.testing.assert_array_equal(image, expected[index][0][:, ::-1])
    center = epoch_rows(sl.Loader(sl.image_folder(root, (4, 6), crop="center"), batch_size=4))
    for index, (image, _) in center.items():
        np.testing.assert_array_equal(image, expected[index][0][2:6, 1:7])
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    normed = sl.Loader(sl.image_folder(root, 8, normalize=(mean, std)), batch_size=4)
    batch = next(iter(normed))
    assert np.from_dlpack(batch["image"]).dtype == np.float32
    assert np.from_dlpack(batch["image"]).shape == (4, 3, 8, 8)  # CHW, as the C++ batcher
    for index, (image, _) in epoch_rows(normed).items():
        chw = expected[index][0].transpose(2, 0, 1).astype(np.float32)
        want = (chw / np.float32(255) - np.float32(mean)[:, None, None]) / np.float32(
            std)[:, None, None]
        np.testing.assert_allclose(image, want, rtol=0, atol=1e-6)


def test_grey_images_and_jpeg(tmp_path):
    root = tmp_path / "grey" / "only"
    root.mkdir(parents=True)
    image = np.tile(np.linspace(0, 255, 16, dtype=np.uint8), (16, 1))
    Image.fromarray(image).save(root / "a.jpg", quality=95)
    loader = sl.Loader(sl.image_folder(root.parent, 16, channels=1, reduced_decode=False),
                       batch_size=1)
    out = np.from_dlpack(next(iter(loader))["image"])
    assert out.shape == (1, 16, 16, 1)
    reference = np.asarray(Image.open(root / "a.jpg").convert("L"))
    assert np.abs(out[0, :, :, 0].astype(int) - reference).max() <= 2


def test_random_augmentation_is_a_function_of_seed_epoch_and_index(folder):
    root, _ = folder

    def run(workers, seed=7):
        loader = sl.Loader(sl.image_folder(root, 6, crop="random", scale=(0.3, 1.0), flip=0.5,
                                           color_jitter=(0.4, 0.4, 0.4)),
                           batch_size=3, shuffle=True, seed=seed, num_workers=workers)
        return [epoch_rows(loader) for _ in range(2)]

    a, b = run(0), run(3)
    for epoch in range(2):
        for index in a[epoch]:
            np.testing.assert_array_equal(a[epoch][index][0], b[epoch][index][0])
    assert any(not np.array_equal(a[0][i][0], a[1][i][0]) for i in a[0])  # epochs differ
    c = run(0, seed=8)
    assert any(not np.array_equal(a[0][i][0], c[0][i][0]) for i in a[0])  # seeds differ


def test_tar_shards_read_every_sample(shards):
    directory, expected = shards
    images = sl.tar_shards(directory, 8)
    assert images.num_samples == 15 and len(images.paths) == 3
    assert images.key(5) == "s005"
    rows = epoch_rows(sl.Loader(images, batch_size=4, shuffle=True, seed=3, num_workers=2))
    assert sorted(rows) == list(range(15))
    for index, (image, label) in rows.items():
        np.testing.assert_array_equal(image, expected[index][0])
        assert label == expected[index][1]


@pytest.mark.parametrize("shuffle_shards", [False, True])
def test_tar_shards_exactly_once_over_share_and_split(shards, shuffle_shards):
    directory, expected = shards
    seen = []
    for rank in range(2):
        loader = sl.Loader(sl.tar_shards(directory, 8, normalize=(0.5, 0.25)), batch_size=2,
                           shuffle=True, shuffle_shards=shuffle_shards, seed=11,
                           remainder="pad", num_workers=1)
        for pair in zip(*loader.share(2, rank).split(2)):
            for batch in pair:
                labels = np.from_dlpack(batch["label"])
                np.testing.assert_array_equal(labels, [expected[i][1] for i in batch.indices])
                seen.extend(batch.indices[batch.mask])
    assert sorted(seen) == list(range(15))


def test_tar_with_a_bad_image_member_raises_naming_shard_and_key(tmp_path):
    path = tmp_path / "bad.tar"
    write_shard(path, [("good", png_bytes(pixels(1)), "1"),
                       ("broken", b"\x89PNG\r\n\x1a\n but then nothing of a PNG", "2"),
                       ("fine", png_bytes(pixels(2)), "3")])
    loader = sl.Loader(sl.tar_shards(path, 8), batch_size=1, num_workers=2)
    with pytest.raises(sl.DataError) as raised:
        for _ in loader:
            pass
    message = str(raised.value)
    assert "bad.tar:broken" in message and "sample 1" in message
    assert "dataset index 1" in message and "epoch 0, step 1" in message and "cpu:0" in message


def test_tar_with_a_bad_label_or_damaged_archive_is_refused_at_open(tmp_path):
    path = tmp_path / "label.tar"
    write_shard(path, [("a", png_bytes(pixels(1)), "1"), ("b", png_bytes(pixels(2)), "two")])
    with pytest.raises(sl.InputError, match=r"label\.tar.*'b'|label\.tar.*b\.cls"):
        sl.tar_shards(path, 8)
    lonely = tmp_path / "lonely.tar"
    write_shard(lonely, [("a", png_bytes(pixels(1)), "1")], extra={"b.png": png_bytes(pixels(3))})
    with pytest.raises(sl.InputError, match=r"lonely\.tar"):
        sl.tar_shards(lonely, 8)
    damaged = tmp_path / "damaged.tar"
    write_shard(damaged, [("a", png_bytes(pixels(1)), "1")])
    data = bytearray(damaged.read_bytes())
    data[148:156] = b"00000000"  # the first header's checksum
    damaged.write_bytes(bytes(data))
    with pytest.raises(sl.InputError, match=r"damaged\.tar"):
        sl.tar_shards(damaged, 8)


def test_image_folder_errors(tmp_path, folder):
    root, _ = folder
    with pytest.raises(sl.InputError, match="does not exist"):
        sl.image_folder(tmp_path / "nowhere", 8)
    with pytest.raises(sl.UsageError, match="crop"):
        sl.image_folder(root, 8, crop="zoom")
    with pytest.raises(sl.UsageError):
        sl.image_folder(root, 8, flip=1.5)
    with pytest.raises(sl.UsageError, match="one mean and one std per channel"):
        sl.image_folder(root, 8, normalize=((0.5, 0.5), (0.2, 0.2)))
    (root / "bee" / "01.png").write_bytes(b"not a png at all")
    loader = sl.Loader(sl.image_folder(root, 8), batch_size=4)
    with pytest.raises(sl.DataError, match=r"bee/01\.png"):
        list(loader)


def test_a_build_without_images_says_so(monkeypatch, folder):
    root, _ = folder
    monkeypatch.setattr(sl._native, "has_images", False)
    with pytest.raises(sl.NotBuiltError, match="built without images.*libturbojpeg0-dev"):
        sl.image_folder(root, 8)


def test_window_decode_is_still_taken_as_the_old_name_of_region_decode(tmp_path):
    from stoke_loader._images import _region_decode
    assert _region_decode(True, None) is True
    assert _region_decode(False, None) is False
    assert _region_decode(True, False) is False  # the old name, given, decides
    assert _region_decode(False, True) is True
    root = tmp_path / "photos" / "only"
    root.mkdir(parents=True)
    Image.fromarray(pixels(3, 48, 64)).save(root / "a.jpg", quality=90)

    def first(**decode):
        source = sl.image_folder(root.parent, 16, crop="random", reduced_decode=False, **decode)
        return np.from_dlpack(next(iter(sl.Loader(source, batch_size=1, seed=5)))["image"])

    # A region decode renders the pixels of a whole decode, by either name of the option.
    whole = first(region_decode=False)
    assert np.array_equal(first(window_decode=False), whole)
    assert np.array_equal(first(region_decode=True), whole)
