"""Large and hostile image sizes through `imgbatch run`: the side bound
(--max-side) refuses headers before any allocation, and the credit caps,
not the side, bound memory (docs/credits.md)."""
import io
import os
import struct
import subprocess
import sys
import zlib

from PIL import Image

from ibtest import encoded_job, frames, raw_job, results_of, run
from imgbatch import imgbatch_pb2 as pb

BIN = os.environ["IB_BIN"]


def png_header_only(w, h):
    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr
    chunk += struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    idat = zlib.compress(b"\0" * 64)
    chunk += struct.pack(">I", len(idat)) + b"IDAT" + idat + struct.pack(">I", zlib.crc32(b"IDAT" + idat))
    return b"\x89PNG\r\n\x1a\n" + chunk


def jpeg_with_size(w, h):
    """A real 16x16 JPEG whose SOF0 claims w x h."""
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), (10, 200, 30)).save(buf, "JPEG", quality=90)
    data = bytearray(buf.getvalue())
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = struct.pack(">HH", h, w)
    return bytes(data)


def camera_jpeg(w=6000, h=4000):
    """A camera-sized photo stand-in: smooth gradients with some texture."""
    x = Image.linear_gradient("L").resize((w, h))
    y = x.transpose(Image.Transpose.ROTATE_90).resize((w, h))
    noise = Image.effect_noise((w, h), 40)
    im = Image.merge("RGB", (x, y, noise))
    buf = io.BytesIO()
    im.save(buf, "JPEG", quality=85)
    return buf.getvalue()


def peak_rss_mb(args, jobs):
    wrapper = ("import resource, subprocess, sys; "
               "p = subprocess.run(sys.argv[1:], stdin=sys.stdin, stdout=sys.stdout); "
               "sys.stderr.write('RSS=%d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss);"
               "sys.exit(p.returncode)")
    p = subprocess.run([sys.executable, "-c", wrapper, BIN, "run", *args], input=frames(jobs),
                       capture_output=True, timeout=120)
    err = p.stderr.decode(errors="replace")
    return p, results_of(p.stdout), int(err.rsplit("RSS=", 1)[1]) / 1024


def test_hostile_headers_are_refused_before_allocation_naming_size_and_option():
    jobs = [encoded_job(1, png_header_only(65535, 65535)),
            encoded_job(2, jpeg_with_size(65500, 65500)),
            encoded_job(3, png_header_only(16385, 2))]
    p, results, peak = peak_rss_mb([], jobs)
    assert p.returncode == 0, p.stderr
    got = {r.key_u64: r for r in results}
    for key, size in ((1, "65535x65535"), (2, "65500x65500"), (3, "16385x2")):
        e = got[key].error
        assert e.kind == pb.LIMIT and e.stage == pb.VALIDATE, (key, e)
        assert size in e.message and "16384" in e.message and "--max-side" in e.message, e.message
    # 65535^2 RGB would be 12 GiB: nothing of that size was allocated.
    assert peak < 200, peak


def test_a_job_over_max_side_is_a_limit_naming_the_side_and_the_option():
    p, results = run([raw_job(1, 1001, 2, "L"), raw_job(2, 1000, 2, "L"), raw_job(3, 2, 1001, "L")],
                     "--max-side", "1000")
    assert p.returncode == 0, p.stderr
    got = {r.key_u64: r for r in results}
    assert got[2].WhichOneof("outcome") == "image", got[2]
    for key, size in ((1, "1001x2"), (3, "2x1001")):
        e = got[key].error
        assert e.kind == pb.LIMIT, e
        assert size in e.message and "maximum side 1000" in e.message and "--max-side" in e.message


def test_max_side_out_of_range_is_a_usage_error_naming_the_range():
    for v in ("0", "65536", "x"):
        p = subprocess.run([BIN, "run", "--max-side", v], input=b"", capture_output=True)
        assert p.returncode == 2
        assert b"1..65535" in p.stderr, p.stderr
        # The worker checks its flag, IMGBATCH_MAX_SIDE and the config file alike.
        p = subprocess.run([BIN, "worker", "--brokers", "127.0.0.1:1", "--max-side", v],
                           capture_output=True, timeout=30)
        assert p.returncode == 2 and b"1..65535" in p.stderr, p.stderr
        p = subprocess.run([BIN, "worker", "--brokers", "127.0.0.1:1"], capture_output=True,
                           timeout=30, env={**os.environ, "IMGBATCH_MAX_SIDE": v})
        assert p.returncode == 2 and b"IMGBATCH_MAX_SIDE" in p.stderr, p.stderr


def test_a_photo_too_large_for_the_caps_is_a_limit_naming_need_and_cap():
    jpeg = camera_jpeg()
    p, results = run([encoded_job(1, jpeg)], "--backend", "cpu", "--host-bytes", "32M")
    assert p.returncode == 0, p.stderr
    e = results[0].error
    assert e.kind == pb.LIMIT and e.stage == pb.ADMIT, e
    assert "host_bytes cap 33554432" in e.message and "6000x4000" in e.message, e.message
