"""The demo's sample jobs: a few graphs built with the Pillow-shaped client,
run through `imgbatch run`, saved as PNG, and each checked against the same
graph replayed on real Pillow 12.3."""
import argparse
import io
import os

from PIL import Image as PILImage

import imgbatch
from imgbatch import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps


def sample_png(w, h):
    im = PILImage.new("RGB", (w, h))
    im.putdata([((x * 255) // w, (y * 255) // h, ((x * y) * 255) // (w * h))
                for y in range(h) for x in range(w)])
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def graphs():
    a = Image.open(io.BytesIO(sample_png(640, 480)))
    b = Image.open(io.BytesIO(sample_png(257, 131)))
    yield "invert", ImageOps.invert(a)
    yield "gaussian-blur-4", a.filter(ImageFilter.GaussianBlur(4))
    yield "median3-mirror", ImageOps.mirror(b.filter(ImageFilter.MedianFilter(3)))
    yield "multiply-rotated", ImageChops.multiply(a, a.transpose(Image.Transpose.ROTATE_180))
    yield "contrast-grayscale", ImageOps.grayscale(ImageEnhance.Contrast(b).enhance(1.8))
    yield "crop-expand", ImageOps.expand(a.crop((100, 100, 356, 300)), border=8,
                                               fill=(255, 128, 0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    recorded = dict(graphs())
    jobs = (im.to_job(key=name, output="png") for name, im in recorded.items())
    ok = True
    for r in imgbatch.run_local(jobs, binary=a.bin, backend=a.backend):
        if r.error is not None:
            print(f"{r.input_key}: error {r.error.stage}/{r.error.kind}: {r.error.message}")
            ok = False
            continue
        path = os.path.join(a.out, f"{r.input_key}.png")
        with open(path, "wb") as f:
            f.write(r.image.data)
        got = PILImage.open(io.BytesIO(r.image.data))
        same = got.tobytes() == recorded[r.input_key].replay().tobytes()
        ok &= same
        print(f"{r.input_key:20s} job {r.job_id}  {r.image.mode:4s} {r.image.width}x{r.image.height}"
              f"  -> {path}  equal to Pillow 12.3: {same}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
