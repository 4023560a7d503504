"""Builds sample jobs, runs them through `imgbatch run`, saves the results
as PNG files and checks each against Pillow's own answer."""
import argparse
import io
import os
import subprocess

from PIL import Image as PILImage

from imgbatch import imgbatch_pb2 as pb
from google.protobuf.internal.decoder import _DecodeVarint32
from google.protobuf.internal.encoder import _VarintBytes


def sample_png(w, h):
    im = PILImage.new("RGB", (w, h))
    im.putdata([((x * 255) // w, (y * 255) // h, ((x + y) * 255) // (w + h))
                for y in range(h) for x in range(w)])
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def job(key, png):
    j = pb.Job(key_string=key)
    j.source.encoded = png
    j.nodes.add().source.index = 0
    n = j.nodes.add()
    n.copy.SetInParent()
    n.inputs.append(0)
    j.output.cpu.format = pb.PNG
    return j.SerializeToString()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    pngs = {f"sample-{w}x{h}": sample_png(w, h) for w, h in [(64, 48), (257, 131), (640, 480)]}
    stream = b"".join(_VarintBytes(len(m)) + m for m in (job(k, v) for k, v in pngs.items()))
    out = subprocess.run([a.bin, "run", "--backend", a.backend], input=stream,
                         capture_output=True, check=True).stdout
    pos = 0
    while pos < len(out):
        n, pos = _DecodeVarint32(out, pos)
        r = pb.Result()
        r.ParseFromString(out[pos:pos + n])
        pos += n
        if r.WhichOneof("outcome") != "image":
            print(f"{r.key_string}: error {r.error.message}")
            continue
        path = os.path.join(a.out, r.key_string + ".png")
        with open(path, "wb") as f:
            f.write(r.image.data)
        want = PILImage.open(io.BytesIO(pngs[r.key_string])).copy()
        got = PILImage.open(io.BytesIO(r.image.data))
        same = got.tobytes() == want.tobytes()
        print(f"{r.key_string}: job {r.job_id} {r.image.mode} {r.image.width}x{r.image.height}"
              f" -> {path} (equal to Pillow: {same})")


if __name__ == "__main__":
    main()
