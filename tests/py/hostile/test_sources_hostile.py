"""Hostile sources through `imgbatch run`: path sandbox (including a swap race),
special files, source sizes before admission, truncated and corrupt images."""
import ctypes
import io
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib

import pytest
from PIL import Image

from ibtest import encoded_job, frames, path_job, results_of, run
from imgbatch import imgbatch_pb2 as pb

BIN = os.environ["IB_BIN"]


def png(path, value, size=(2, 2), mode="L"):
    Image.new(mode, size, value).save(path, "PNG")


def by_key(results):
    return {r.key_u64 if r.WhichOneof("input_key") == "key_u64" else r.key_string: r
            for r in results}


# ---------------------------------------------------------------- sandbox

@pytest.fixture
def tree(tmp_path):
    """root/ with images and links; outside.png next to it."""
    root = tmp_path / "root"
    root.mkdir()
    png(tmp_path / "outside.png", 99)
    png(root / "a.png", 11)
    (root / "sub").mkdir()
    png(root / "sub" / "b.png", 22)
    os.symlink("../a.png", root / "sub" / "up")
    os.symlink("sub", root / "linkdir")
    os.symlink("../outside.png", root / "esc")
    os.symlink(str(tmp_path / "outside.png"), root / "abs")
    os.symlink("..", root / "escdir")
    os.symlink(str(root / "sub"), root / "absdir")  # absolute, but inside
    return root


def test_symlinks_inside_the_root_work_and_escapes_are_invalid_naming_source_and_path(tree):
    ok = {1: "a.png", 2: "sub/up", 3: "linkdir/b.png", 4: "linkdir/up", 5: "absdir/b.png"}
    bad = {10: "esc", 11: "abs", 12: "escdir/outside.png", 13: "/etc/passwd",
           14: "../outside.png", 15: "sub/../../outside.png"}
    jobs = [path_job(k, p) for k, p in {**ok, **bad}.items()]
    # An escape in an extra source is named by its index.
    jobs.append(path_job(20, "a.png", "sub/b.png", "esc"))
    p, results = run(jobs, "--source-root", str(tree))
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    got = by_key(results)
    want_px = {1: 11, 2: 11, 3: 22, 4: 11, 5: 22}
    for k, v in want_px.items():
        assert got[k].WhichOneof("outcome") == "image", got[k].error.message
        assert set(got[k].image.data) == {v}
    for k, path in bad.items():
        e = got[k].error
        assert (e.kind, e.stage) == (pb.INVALID, pb.VALIDATE), (path, e)
        assert "source 0" in e.message and path in e.message, e.message
    e = got[20].error
    assert (e.kind, e.stage) == (pb.INVALID, pb.VALIDATE) and "source 2" in e.message
    assert "'esc'" in e.message


def _renameat2_exchange():
    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.renameat2
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    AT_FDCWD, RENAME_EXCHANGE = -100, 2

    def exchange(a, b):
        if fn(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")
    return exchange


def test_no_read_lands_outside_while_a_component_flips_between_directory_and_symlink(tmp_path):
    # root/sw is a directory holding f.png (pixel 11); root/alt a symlink to
    # the outside directory whose f.png has pixel 99. A thread exchanges them
    # as fast as it can while 10,000 jobs read sw/f.png: with realpath + open
    # 1 to 2% of them read the outside file. Any may fail; none may read it.
    exchange = _renameat2_exchange()
    root, outdir = tmp_path / "root", tmp_path / "outdir"
    root.mkdir()
    outdir.mkdir()
    png(outdir / "f.png", 99)
    (root / "sw").mkdir()
    png(root / "sw" / "f.png", 11)
    os.symlink("../outdir", root / "alt")
    stop, swaps = threading.Event(), [0]

    def swapper():
        while not stop.is_set():
            exchange(root / "sw", root / "alt")
            swaps[0] += 1

    jobs = [path_job(k, "sw/f.png") for k in range(10000)]
    t = threading.Thread(target=swapper)
    t.start()
    try:
        p, results = run(jobs, "--source-root", str(root), timeout=120)
    finally:
        stop.set()
        t.join()
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    assert len(results) == len(jobs)
    images = [r for r in results if r.WhichOneof("outcome") == "image"]
    outside = [r for r in images if set(r.image.data) != {11}]
    assert swaps[0] > 100, "the swapper barely ran"
    assert images, "no job ever read the inside file"
    assert not outside, f"{len(outside)} of {len(jobs)} reads landed outside the root"
    for r in results:
        if r.WhichOneof("outcome") == "error":  # raced: refused, never outside
            assert r.error.kind in (pb.INVALID, pb.DECODE), r.error


# ---------------------------------------------------------- special files

def test_fifo_socket_and_directory_are_refused_promptly_and_the_next_job_runs(tmp_path):
    png(tmp_path / "ok.png", 7)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    os.symlink("fifo", tmp_path / "fifolink")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    try:
        jobs = [path_job("fifo", "fifo"), path_job("fifolink", "fifolink"),
                path_job("dir", "dir"), path_job("sock", "sock"), path_job("ok", "ok.png")]
        t0 = time.monotonic()
        p, results = run(jobs, "--source-root", str(tmp_path), timeout=20)
    finally:
        sock.close()
    assert time.monotonic() - t0 < 10
    assert p.returncode == 0 and p.stderr == b"", p.stderr
    got = by_key(results)
    for key, kind in [("fifo", "FIFO"), ("fifolink", "FIFO"), ("dir", "directory"),
                      ("sock", "regular file")]:
        e = got[key].error
        assert (e.kind, e.stage) == (pb.INVALID, pb.VALIDATE), (key, e)
        assert "source 0" in e.message and kind in e.message, e.message
    assert got["ok"].WhichOneof("outcome") == "image" and set(got["ok"].image.data) == {7}


# ------------------------------------------------- sizes before admission

def _peak_rss_run(args, data):
    """Runs imgbatch in a fresh Python parent so RUSAGE_CHILDREN is its alone."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], input=sys.stdin.buffer.read(), capture_output=True)\n"
        "sys.stdout.buffer.write(p.stdout)\n"
        "sys.stderr.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n")
    p = subprocess.run([sys.executable, "-c", code, BIN, "run", *args], input=data,
                       capture_output=True, timeout=120)
    return results_of(p.stdout), int(p.stderr.decode().strip().splitlines()[-1]) * 1024


def test_path_sources_are_sized_against_host_bytes_before_any_is_read(tmp_path):
    # 31 references to one 200 MB file (a valid PNG, then sparse zeros): read
    # whole, that was 6 GB before the Limit answer. Sized first, none is read.
    big = tmp_path / "big.png"
    png(big, 3)
    with open(big, "r+b") as f:
        f.truncate(200_000_000)
    png(tmp_path / "ok.png", 5)
    # One 100 MB file: under the 256 MiB source and job caps, over host_bytes
    # alone (the executor lowers the job cap to it), so not read either.
    mid = tmp_path / "mid.png"
    png(mid, 4)
    with open(mid, "r+b") as f:
        f.truncate(100_000_000)
    job = path_job("big", "big.png", *["big.png"] * 30)
    data = frames([job, path_job("mid", "mid.png"), path_job("ok", "ok.png")])
    results, peak = _peak_rss_run(["--source-root", str(tmp_path), "--host-bytes", "64M"], data)
    got = by_key(results)
    e = got["big"].error
    assert (e.kind, e.stage) == (pb.LIMIT, pb.VALIDATE), e
    assert "source 0" in e.message and "200000000" in e.message and "big.png" in e.message, \
        e.message
    e = got["mid"].error
    assert (e.kind, e.stage) == (pb.LIMIT, pb.VALIDATE), e
    assert "100000000" in e.message and str(64 << 20) in e.message, e.message
    assert got["ok"].WhichOneof("outcome") == "image"
    assert peak < 200 << 20, f"peak RSS {peak >> 20} MiB"


def test_path_sources_together_are_capped_per_job_even_when_each_fits(tmp_path):
    # Two 150 MB files: each under the 256 MiB source cap and under a 1 GiB
    # host_bytes, together over the 256 MiB per-job cap.
    for name in ("x.png", "y.png"):
        with open(tmp_path / name, "wb") as f:
            f.truncate(150_000_000)
    png(tmp_path / "ok.png", 5)
    jobs = [path_job("xy", "x.png", "y.png"), path_job("ok", "ok.png", "ok.png", "ok.png")]
    results, peak = _peak_rss_run(["--source-root", str(tmp_path), "--host-bytes", "1G"],
                                  frames(jobs))
    got = by_key(results)
    e = got["xy"].error
    assert (e.kind, e.stage) == (pb.LIMIT, pb.VALIDATE), e
    assert "source 1" in e.message and "'y.png'" in e.message and "300000000" in e.message, \
        e.message
    assert got["ok"].WhichOneof("outcome") == "image"
    assert peak < 200 << 20, f"peak RSS {peak >> 20} MiB"


# ------------------------------------------------ truncated and corrupt images

def _jpeg_4000_square_cut_to_900_bytes():
    b = io.BytesIO()
    Image.effect_noise((4000, 4000), 50).convert("RGB").save(b, "JPEG")
    return b.getvalue()[:900]


def _png_bytes(size=(256, 256)):
    b = io.BytesIO()
    Image.effect_noise(size, 50).convert("RGB").save(b, "PNG")
    return b.getvalue()


def _chunk_offset(data, kind):
    i = 8
    while i < len(data):
        n = struct.unpack(">I", data[i:i + 4])[0]
        if data[i + 4:i + 8] == kind:
            return i, n
        i += 12 + n
    raise AssertionError(kind)


def test_truncated_and_corrupt_images_are_decode_errors_with_the_decoders_cause_and_no_stderr():
    jpeg = _jpeg_4000_square_cut_to_900_bytes()
    with pytest.raises(OSError, match="truncated"):  # what Pillow says about it
        Image.open(io.BytesIO(jpeg)).load()
    full = _png_bytes()
    ihdr, n = _chunk_offset(full, b"IHDR")
    bad_crc = bytearray(full)
    bad_crc[ihdr + 8 + n] ^= 0xFF
    idat, n = _chunk_offset(full, b"IDAT")
    bad_idat = bytearray(full)
    bad_idat[idat + 8 + 40:idat + 8 + 140] = bytes(100)
    cases = {
        "jpeg": (jpeg, "jpeg: truncated"),
        "png": (full[:len(full) // 2], "not enough data"),
        "png_ihdr_crc": (bytes(bad_crc), "IHDR: CRC error"),
        "png_idat": (bytes(bad_idat), "IDAT"),
    }
    jobs = [encoded_job(k, v) for k, (v, _) in cases.items()]
    jobs.append(encoded_job("ok", full))
    p, results = run(jobs)
    assert p.returncode == 0
    assert p.stderr == b"", p.stderr.decode(errors="replace")
    got = by_key(results)
    for key, (_, cause) in cases.items():
        e = got[key].error
        assert e.kind == pb.DECODE and e.stage in (pb.DECODE, pb.VALIDATE), (key, e)
        assert cause in e.message, (key, e.message)
        assert "libvips failed" not in e.message
    assert got["ok"].WhichOneof("outcome") == "image"
    assert got["ok"].image.data == Image.open(io.BytesIO(full)).tobytes()


# ------------------------------------------------ PNG bombs (codec/png_decode.c)

def _png(w, h, depth, color, idat, tail=b"", iend=True):
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(
            ">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color,
                                                                0, 0, 0))
            + chunk(b"IDAT", idat) + (chunk(b"IEND", b"") if iend else b"") + tail)


def _zeros_deflated(n):
    z = zlib.compressobj(9)
    block = bytes(1 << 20)
    out = [z.compress(block) for _ in range(n >> 20)]
    out.append(z.compress(bytes(n & ((1 << 20) - 1))))
    return b"".join(out) + z.flush()


# A 76-byte file whose zTXt declares 1.9 GB (found by fuzz_image): libpng
# under libvips allocated the declared length; the worker now skips it.
_ZTXT_2G = bytes.fromhex(
    "89504e470d0a1a0a0000000d494844520000000d000000070203000001d9191f1f0000000c504c5445"
    "204792a337bec81922c81062d92cb3247665206a7a5458") + b"tilter value"


def test_png_bombs_are_bounded_in_memory_and_answered_like_any_bad_image(tmp_path):
    rgb8 = 8 * (1 + 8 * 3)
    cases = {
        "ztxt-2g": (_ZTXT_2G, pb.DECODE_ERROR, "chunk data is too large"),
        "wide": (_png(16385, 1, 8, 0, zlib.compress(bytes(16386))), pb.LIMIT, "16385x1"),
        # 8x8 whose IDAT goes on for 200 MB of zeros (~200 KB of file)
        "tail": (_png(8, 8, 8, 2, _zeros_deflated(rgb8 + (200 << 20))), pb.DECODE_ERROR,
                 "far past the last row"),
        "short": (_png(64, 64, 8, 2, zlib.compress(bytes(40))), pb.DECODE_ERROR, "png"),
    }
    fine = {
        "zeros-4096": _png(4096, 4096, 8, 0, _zeros_deflated(4096 * 4097)),
        "no-iend": _png(8, 8, 8, 2, zlib.compress(bytes(rgb8)), iend=False),
        "after-iend": _png(8, 8, 8, 2, zlib.compress(bytes(rgb8)), tail=b"garbage" * 100),
    }
    jobs = [encoded_job(k, v) for k, (v, _, _) in cases.items()]
    jobs += [encoded_job(k, v) for k, v in fine.items()]
    # The worker's peak RSS, from a wrapper process of its own (RUSAGE_CHILDREN
    # of this one holds every earlier test's children).
    rss = tmp_path / "rss"
    wrapper = ("import resource, subprocess, sys; "
               "p = subprocess.run(sys.argv[2:], stdin=sys.stdin, stdout=sys.stdout); "
               "open(sys.argv[1], 'w').write(str(resource.getrusage("
               "resource.RUSAGE_CHILDREN).ru_maxrss)); sys.exit(p.returncode)")
    p = subprocess.run([sys.executable, "-c", wrapper, str(rss), BIN, "run"],
                       input=frames(jobs), capture_output=True, timeout=120)
    assert p.returncode == 0 and p.stderr == b"", p.stderr.decode(errors="replace")
    got = by_key(results_of(p.stdout))
    for key, (_, kind, words) in cases.items():
        e = got[key].error
        assert e.kind == kind, (key, e)
        assert words in e.message, (key, e.message)
    assert got["zeros-4096"].image.data == bytes(4096 * 4096)
    for key in ("no-iend", "after-iend"):
        assert got[key].image.data == bytes(8 * 8 * 3), key
    # The 4096^2 image's source, output and result are ~50 MB; the zTXt
    # alone cost libvips' path 1.9 GB.
    peak_mb = int(rss.read_text()) / 1024
    assert peak_mb < 600, peak_mb
