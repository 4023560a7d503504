"""The demo's sample jobs (scripts/demo.sh -> `imgbatch demo`): about twenty
graphs over generated images, built with the Pillow-shaped client, written as
delimited Jobs, and beside them the expectation for each - the bytes real
Pillow 12.3 gives for the same graph (a raw ImageData Result), the error a
poison message must get, or nothing where Pillow has no equivalent (tone)."""
import argparse
import io
import os

from PIL import Image as PILImage

import imgbatch
from imgbatch import Image, ImageChops, ImageEnhance, ImageFilter, ImageOps
from imgbatch import imgbatch_pb2 as pb


def sample_png(w, h, mode="RGB"):
    im = PILImage.new("RGB", (w, h))
    im.putdata([((x * 255) // w, (y * 255) // h, ((x * y) * 255) // (w * h))
                for y in range(h) for x in range(w)])
    buf = io.BytesIO()
    im.convert(mode).save(buf, "PNG")
    return buf.getvalue()


def graphs():
    a = Image.open(io.BytesIO(sample_png(640, 480)))
    b = Image.open(io.BytesIO(sample_png(257, 131)))
    c = Image.open(io.BytesIO(sample_png(300, 200, "RGBA")))
    yield "invert", "ImageOps.invert", ImageOps.invert(a)
    yield "gaussian-blur-4", "GaussianBlur(4)", a.filter(ImageFilter.GaussianBlur(4))
    yield "box-blur-2", "BoxBlur(2)", b.filter(ImageFilter.BoxBlur(2))
    yield "median3-mirror", "MedianFilter(3) | mirror", ImageOps.mirror(b.filter(ImageFilter.MedianFilter(3)))
    yield "max5", "MaxFilter(5)", b.filter(ImageFilter.MaxFilter(5))
    yield "sharpen-kernel", "Kernel 3x3 sharpen", a.filter(
        ImageFilter.Kernel((3, 3), [0, -1, 0, -1, 5, -1, 0, -1, 0]))
    yield "multiply-rotated", "multiply(a, rotate180(a))", ImageChops.multiply(
        a, a.transpose(Image.Transpose.ROTATE_180))
    yield "screen", "screen(a, flip(a))", ImageChops.screen(a, ImageOps.flip(a))
    yield "blend-0.3", "Image.blend(a, invert(a), 0.3)", Image.blend(a, ImageOps.invert(a), 0.3)
    yield "contrast-grayscale", "Contrast(1.8) | grayscale", ImageOps.grayscale(
        ImageEnhance.Contrast(b).enhance(1.8))
    yield "brightness", "Brightness(1.4)", ImageEnhance.Brightness(a).enhance(1.4)
    yield "solarize-posterize", "solarize(100) | posterize(3)", ImageOps.posterize(
        ImageOps.solarize(b, 100), 3)
    yield "crop-expand", "crop | expand(8)", ImageOps.expand(a.crop((100, 100, 356, 300)), border=8,
                                                           fill=(255, 128, 0))
    yield "resize-nearest", "resize(160x120, NEAREST)", a.resize((160, 120), Image.Resampling.NEAREST)
    yield "convert-L", "convert('L')", a.convert("L")
    yield "rgba-channel", "getchannel('A') of RGBA", c.getchannel("A")
    yield "paste", "paste(b, (40, 30))", _paste(a, b)
    yield "tone", "tone(exposure +0.5, contrast 0.2)", imgbatch.tone(a, exposure_ev=0.5, contrast=0.2)


def _paste(a, b):
    base = a.copy()
    base.paste(b, (40, 30))  # in place, as Pillow's
    return base


def expected_image(img):
    ref = img.replay()
    r = pb.Result()
    r.image.mode = ref.mode
    r.image.width, r.image.height = ref.size
    r.image.format = pb.RAW
    r.image.data = ref.tobytes()
    return r


def expected_error(stage, kind):
    r = pb.Result()
    r.error.stage = stage
    r.error.kind = kind
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    jobs, expect = [], []
    for key, desc, img in graphs():
        jobs.append(img.to_job(key=key, output="png", metadata={"graph": desc}))
        expect.append(pb.Result() if key == "tone" else expected_image(img))
    # A resident output: kept on the GPU, fetched back with a Download
    # command; the CPU backend refuses it at admission.
    inv = ImageOps.invert(Image.open(io.BytesIO(sample_png(64, 48))))
    jobs.append(inv.to_job(key="resident-invert", output="gpu", metadata={"graph": "invert, output gpu"}))
    expect.append(None)
    # Poison: not a Job at all, and a graph referring to a node after it.
    jobs.append(b"\xffnot a protobuf Job\x00")
    expect.append(expected_error(pb.PARSE, pb.INVALID))
    bad = pb.Job(key_string="cycle")
    bad.source.fill.mode = "L"
    bad.source.fill.width = bad.source.fill.height = 4
    bad.source.fill.color = b"\x00"
    n = bad.nodes.add()
    n.copy.SetInParent()
    n.inputs.append(0)
    bad.metadata["graph"].string_value = "copy reading itself (a cycle)"
    jobs.append(bad.SerializeToString())
    expect.append(expected_error(pb.VALIDATE, pb.INVALID))
    with open(os.path.join(a.out, "jobs.bin"), "wb") as f:
        imgbatch.write_delimited(f, jobs)
    with open(os.path.join(a.out, "expected.bin"), "wb") as f:
        imgbatch.write_delimited(f, [e if e is not None else pb.Result() for e in expect])
    print(f"demo_jobs: {len(jobs)} jobs -> {a.out}/jobs.bin, Pillow's bytes -> {a.out}/expected.bin")


if __name__ == "__main__":
    main()
