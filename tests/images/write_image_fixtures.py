#!/usr/bin/env python3
"""Writes the test images of tests/images/test_decode.cpp into DIR, with the pixels Pillow
(the reference decoder) gives for them.

For each image NAME.jpg or NAME.png it writes NAME.rgb.npy (Pillow's pixels converted to RGB,
uint8, height x width x 3) and NAME.l.npy (grey, height x width). Grey from a colour JPEG is
Pillow's luminance decode (`Image.draft("L", None)`: libjpeg's Y), as TurboJPEG gives it.
For the JPEGs decoded reduced it writes NAME.rgb.s2.npy, .s4, .s8 (and NAME.l.s2.npy ...):
Pillow's `Image.draft(mode, size)` at scale 1/2, 1/4, 1/8. The 16-bit PNGs' reference is the
high byte of the 16-bit samples Pillow decodes. Pillow cannot write interlaced or 16-bit colour
PNGs, so a small writer here makes those and the 16-bit grey one (Pillow still decodes the
reference).

Exits 77 (skip) when Pillow or numpy cannot be imported.
"""

import os
import struct
import sys
import zlib

try:
    import numpy as np
    from PIL import Image
except ImportError as error:  # pragma: no cover - depends on the environment
    print(f"write_image_fixtures.py: {error}", file=sys.stderr)
    sys.exit(77)


def scene(height, width, seed):
    """A deterministic picture with gradients, edges and noise (hard for JPEG and PNG)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1)).astype(np.int32)
    g = (y * 255 // max(height - 1, 1)).astype(np.int32)
    b = (((x // 5) + (y // 3)) % 2 * 200 + 20).astype(np.int32)
    pixels = np.stack([r, g, b], axis=-1) + rng.integers(-30, 31, size=(height, width, 3))
    return np.clip(pixels, 0, 255).astype(np.uint8)


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def adam7_passes(height, width):
    """Adam7's (row start, column start, row step, column step) of each pass."""
    return [(0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2),
            (1, 0, 2, 1)]


def write_png(path, samples, color_type, bit_depth=8, interlaced=False, palette=None, trns=None):
    """A PNG of `samples` (height x width x channels, uint8 or uint16; palette indices for
    colour type 3), every row with filter 0 (None)."""
    height, width = samples.shape[:2]
    dtype = ">u2" if bit_depth == 16 else "u1"

    def rows(image):
        if image.shape[0] == 0 or image.shape[1] == 0:
            return b""
        return b"".join(b"\x00" + row.astype(dtype).tobytes() for row in image)

    if interlaced:
        raw = b"".join(rows(samples[y0::dy, x0::dx]) for y0, x0, dy, dx in
                       adam7_passes(height, width))
    else:
        raw = rows(samples)
    out = b"\x89PNG\r\n\x1a\n"
    out += chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0,
                                      1 if interlaced else 0))
    if palette is not None:
        out += chunk(b"PLTE", bytes(palette))
    if trns is not None:
        out += chunk(b"tRNS", bytes(trns))
    out += chunk(b"IDAT", zlib.compress(raw, 9))
    out += chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(out)


def save_npy(directory, name, array):
    np.save(os.path.join(directory, name), np.ascontiguousarray(array, dtype=np.uint8))


def reference(directory, name, path):
    """NAME.rgb.npy and NAME.l.npy: Pillow's pixels of `path` as RGB and as grey."""
    with Image.open(path) as image:
        save_npy(directory, f"{name}.rgb.npy", np.asarray(image.convert("RGB")))
    with Image.open(path) as image:
        if image.format == "JPEG":
            image.draft("L", None)  # libjpeg's luminance, as TurboJPEG decodes to grey
        save_npy(directory, f"{name}.l.npy", np.asarray(image.convert("L")))


def scaled_references(directory, name, path):
    """NAME.{rgb,l}.s{2,4,8}.npy: Pillow's draft decode at 1/2, 1/4 and 1/8."""
    for mode, tag in (("RGB", "rgb"), ("L", "l")):
        for scale in (2, 4, 8):
            with Image.open(path) as image:
                width, height = image.size
                image.draft(mode, (max(width // scale, 1), max(height // scale, 1)))
                expected = ((width + scale - 1) // scale, (height + scale - 1) // scale)
                assert image.size == expected, (name, scale, image.size, expected)
                assert image.mode == mode, (name, image.mode)
                save_npy(directory, f"{name}.{tag}.s{scale}.npy", np.asarray(image))


def write_jpegs(directory):
    def save(name, image, **options):
        path = os.path.join(directory, f"{name}.jpg")
        image.save(path, "JPEG", **options)
        reference(directory, name, path)
        return path

    rgb = Image.fromarray(scene(48, 64, 1))
    save("rgb420", rgb, quality=90, subsampling=2)
    save("rgb444", rgb, quality=90, subsampling=0)
    save("rgb422", rgb, quality=85, subsampling=1)
    save("greyscale", Image.fromarray(scene(40, 56, 2)).convert("L"), quality=90)
    save("progressive", rgb, quality=80, progressive=True)
    save("odd", Image.fromarray(scene(23, 37, 3)), quality=92, subsampling=2)
    for name, (height, width) in (("square64", (64, 64)), ("photo200x150", (150, 200))):
        path = save(name, Image.fromarray(scene(height, width, 4)), quality=90, subsampling=2)
        scaled_references(directory, name, path)
    scaled_references(directory, "odd", os.path.join(directory, "odd.jpg"))
    scaled_references(directory, "progressive", os.path.join(directory, "progressive.jpg"))
    # CMYK (Adobe), which stoke refuses: no reference.
    Image.new("CMYK", (16, 8), (10, 20, 30, 40)).save(os.path.join(directory, "cmyk.jpg"),
                                                       "JPEG")


def write_pngs(directory):
    def reference_of(name):
        reference(directory, name, os.path.join(directory, f"{name}.png"))

    rgb = scene(30, 41, 5)
    Image.fromarray(rgb).save(os.path.join(directory, "rgb.png"))
    reference_of("rgb")
    Image.fromarray(rgb).convert("L").save(os.path.join(directory, "grey.png"))
    reference_of("grey")
    Image.fromarray(rgb).convert("1").save(os.path.join(directory, "grey1bit.png"))
    reference_of("grey1bit")
    Image.fromarray(rgb).quantize(colors=13).save(os.path.join(directory, "palette.png"))
    reference_of("palette")
    palette_t = Image.fromarray(rgb).quantize(colors=7)
    palette_t.save(os.path.join(directory, "palette_trns.png"), transparency=2)
    reference_of("palette_trns")
    alpha = (np.arange(30 * 41).reshape(30, 41) * 7 % 256).astype(np.uint8)
    Image.fromarray(np.dstack([rgb, alpha]), "RGBA").save(os.path.join(directory, "rgba.png"))
    reference_of("rgba")
    Image.fromarray(np.dstack([rgb[..., 1], alpha]), "LA").save(
        os.path.join(directory, "grey_alpha.png"))
    reference_of("grey_alpha")

    # 16-bit: the reference is the high byte of Pillow's 16-bit samples.
    rng = np.random.default_rng(6)
    rgb16 = rng.integers(0, 65536, size=(17, 29, 3), dtype=np.uint16)
    write_png(os.path.join(directory, "rgb16.png"), rgb16, color_type=2, bit_depth=16)
    with Image.open(os.path.join(directory, "rgb16.png")) as image:
        pillow = np.asarray(image.convert("RGB"))
    assert np.array_equal(pillow, (rgb16 >> 8).astype(np.uint8)), "Pillow: 16-bit RGB"
    save_npy(directory, "rgb16.rgb.npy", pillow)
    save_npy(directory, "rgb16.l.npy", np.asarray(Image.fromarray(pillow).convert("L")))
    grey16 = rng.integers(0, 65536, size=(19, 23), dtype=np.uint16)
    write_png(os.path.join(directory, "grey16.png"), grey16[..., None], color_type=0,
              bit_depth=16)
    with Image.open(os.path.join(directory, "grey16.png")) as image:
        samples = np.asarray(image).astype(np.uint16)
    assert np.array_equal(samples, grey16), "Pillow: 16-bit grey"
    high = (samples >> 8).astype(np.uint8)
    save_npy(directory, "grey16.l.npy", high)
    save_npy(directory, "grey16.rgb.npy", np.dstack([high, high, high]))

    # Adam7-interlaced, colour and grey, of a size whose passes are uneven (and some empty).
    write_png(os.path.join(directory, "interlaced.png"), scene(13, 11, 7), color_type=2,
              interlaced=True)
    reference_of("interlaced")
    write_png(os.path.join(directory, "interlaced_grey.png"), scene(3, 5, 8)[..., :1],
              color_type=0, interlaced=True)
    reference_of("interlaced_grey")


def main():
    if len(sys.argv) != 2:
        print("usage: write_image_fixtures.py DIR", file=sys.stderr)
        return 2
    directory = sys.argv[1]
    os.makedirs(directory, exist_ok=True)
    write_jpegs(directory)
    write_pngs(directory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
