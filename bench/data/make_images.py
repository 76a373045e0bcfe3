"""Writes N JPEGs of varied sizes around 500 x 375 (the ImageNet median),
smooth random content (so JPEG compresses them like photos, not noise),
for bench/data/pipeline_bench.py.

    python3 make_images.py DIR [N]
"""
import os
import sys

import numpy as np
from PIL import Image


def main():
    out = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(2026)
    for i in range(count):
        path = os.path.join(out, f"img{i:05d}.jpg")
        if os.path.exists(path):
            continue
        h = int(rng.integers(300, 451))
        w = int(rng.integers(400, 601))
        coarse = (rng.random((h // 16 + 1, w // 16 + 1, 3)) * 255).astype("uint8")
        image = Image.fromarray(coarse).resize((w, h), Image.BICUBIC)
        image.save(path, quality=90)
    print(f"{count} JPEGs in {out}")


if __name__ == "__main__":
    main()
