"""The realistic image workload: photographs the size and quality of ImageNet's, as a recipe.

Writes COUNT JPEGs made from the colour photographs scikit-image ships (skimage/data:
astronaut, chelsea, coffee, rocket, motorcycles, retina, the Hubble deep field, a micrograph;
a few of its grey photographs too, as ImageNet holds some), each a random crop of one photograph with
a size drawn from ImageNet's distribution (a mean of about 400x350; most are 500x375 or
375x500), resized with Lanczos, flipped or not, its brightness and colour varied a little, and
encoded by Pillow (libjpeg-turbo) at a quality drawn from 85 to 95, 4:2:0. Never random noise,
which decodes unlike a photograph. Deterministic for a seed.

Out: DIR/folder/class-NN/IIIIII.jpg (an ImageFolder; the class is the source photograph) and
DIR/shards/shard-NNNNNN.tar (WebDataset: IIIIII.jpg and IIIIII.cls), and DIR/workload.txt
saying what was written (the recipe, the sizes, the bytes).

  python scripts/image_workload.py --dir build/image-workload --count 4000
"""

import argparse
import io
import math
import os
import tarfile

import numpy as np
import skimage
from PIL import Image, ImageEnhance

# The colour photographs of skimage/data, and the grey ones (written as RGB, as ImageNet's few
# grey images are decoded to RGB).
COLOUR = [
    "astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "motorcycle_left.png",
    "motorcycle_right.png", "retina.jpg", "hubble_deep_field.jpg", "ihc.png",
]
GREY = ["camera.png", "moon.png", "coins.png", "grass.png", "gravel.png", "brick.png"]
GREY_SHARE = 0.03


def sources():
    data = os.path.join(os.path.dirname(skimage.__file__), "data")
    images = []
    for name in COLOUR + GREY:
        with Image.open(os.path.join(data, name)) as image:
            images.append((name, image.convert("RGB")))
    return images


def draw_size(rng):
    """An image size as ImageNet's: the area log-normal around 400x350, the shape mostly 4:3."""
    area = 400 * 350 * math.exp(rng.normal(0.0, 0.35) - 0.35**2 / 2)
    shape = rng.random()
    if shape < 0.55:
        ratio = 4 / 3  # landscape, 500x375 the most common
    elif shape < 0.75:
        ratio = 3 / 4  # portrait
    elif shape < 0.85:
        ratio = 1.0
    else:
        ratio = math.exp(rng.uniform(math.log(0.5), math.log(2.0)))
    width = int(round(math.sqrt(area * ratio)))
    height = int(round(math.sqrt(area / ratio)))
    return max(64, min(height, 1200)), max(64, min(width, 1200))


def make_image(photo, rng, height, width):
    """A random crop of `photo` with the aspect ratio of `height` x `width`, resized to it."""
    source_width, source_height = photo.size
    ratio = width / height
    fraction = rng.uniform(0.3, 1.0)
    crop_width = min(source_width, math.sqrt(fraction * source_width * source_height * ratio))
    crop_height = min(source_height, crop_width / ratio)
    crop_width = min(crop_width, crop_height * ratio)
    left = rng.uniform(0, source_width - crop_width)
    top = rng.uniform(0, source_height - crop_height)
    box = (left, top, left + crop_width, top + crop_height)
    image = photo.resize((width, height), Image.LANCZOS, box=box)
    if rng.random() < 0.5:
        image = image.transpose(Image.FLIP_LEFT_RIGHT)
    image = ImageEnhance.Brightness(image).enhance(rng.uniform(0.85, 1.15))
    return ImageEnhance.Color(image).enhance(rng.uniform(0.8, 1.2))


def add_member(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True, help="where the folder and the shards go")
    parser.add_argument("--count", type=int, default=4000, help="JPEGs to write")
    parser.add_argument("--per-shard", type=int, default=1000, help="samples a tar shard")
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args()

    photos = sources()
    colour = len(COLOUR)
    folder = os.path.join(args.dir, "folder")
    shards = os.path.join(args.dir, "shards")
    os.makedirs(shards, exist_ok=True)
    heights, widths, sizes, qualities = [], [], [], []
    tar = None
    for i in range(args.count):
        rng = np.random.default_rng([args.seed, i])
        if rng.random() < GREY_SHARE:
            label = colour + int(rng.integers(len(GREY)))
        else:
            label = int(rng.integers(colour))
        height, width = draw_size(rng)
        image = make_image(photos[label][1], rng, height, width)
        quality = int(rng.integers(85, 96))
        out = io.BytesIO()
        image.save(out, "JPEG", quality=quality, subsampling="4:2:0")
        data = out.getvalue()
        key = f"{i:06d}"
        os.makedirs(os.path.join(folder, f"class-{label:02d}"), exist_ok=True)
        with open(os.path.join(folder, f"class-{label:02d}", key + ".jpg"), "wb") as file:
            file.write(data)
        if i % args.per_shard == 0:
            if tar is not None:
                tar.close()
            name = os.path.join(shards, f"shard-{i // args.per_shard:06d}.tar")
            tar = tarfile.open(name, "w", format=tarfile.USTAR_FORMAT)
        add_member(tar, key + ".jpg", data)
        add_member(tar, key + ".cls", str(label).encode())
        heights.append(height)
        widths.append(width)
        sizes.append(len(data))
        qualities.append(quality)
    if tar is not None:
        tar.close()
    summary = (
        f"{args.count} JPEGs (seed {args.seed}) from {len(photos)} photographs of scikit-image "
        f"{skimage.__version__} ({', '.join(name for name, _ in photos)}), 4:2:0, quality "
        f"{min(qualities)} to {max(qualities)}\n"
        f"size: mean {np.mean(heights):.0f}x{np.mean(widths):.0f} (height x width), "
        f"heights {min(heights)} to {max(heights)}, widths {min(widths)} to {max(widths)}\n"
        f"bytes: mean {np.mean(sizes) / 1024:.1f} KiB, total {sum(sizes) / 2**20:.1f} MiB\n"
        f"out: {folder} (ImageFolder, class = source photograph), {shards} "
        f"({math.ceil(args.count / args.per_shard)} WebDataset shards)\n"
    )
    with open(os.path.join(args.dir, "workload.txt"), "w") as file:
        file.write(summary)
    print(summary, end="")


if __name__ == "__main__":
    main()
