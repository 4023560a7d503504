# tests/gpu/capacity_run.py - capacity at the default caps (docs/credits.md) on the GPU machine, through the real CLI:
# four 4096^2 RGBA jobs (Kernel 3x3, Kernel -> GaussianBlur(2.5), two more Kernels) in one
# stream into `imgbatch run --backend cuda` at the default caps, each compared with
# Pillow. Hand-encoded protobuf (the GPU machine has no protobuf module). Usage, after
# `source .devpack/env.sh` (imgbatch on PATH): python3 tests/gpu/capacity_run.py [cuda|cpu]
import struct, subprocess, sys, time
import numpy as np
from PIL import Image, ImageFilter

S = 4096
W = [1.0, 2.0, 1.0, 2.0, -4.0, 2.0, 1.0, 2.0, 1.0]
def vi(n):
    out = bytearray()
    while True:
        b = n & 0x7F; n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n: return bytes(out)
def key(f, wt): return vi(f << 3 | wt)
def ld(f, b): return key(f, 2) + vi(len(b)) + b
def dbl(f, v): return key(f, 1) + struct.pack("<d", v)
def node(inputs, opfield, opmsg):
    ins = b"".join(vi(i) for i in inputs)
    return (ld(1, ins) if inputs else b"") + ld(opfield, opmsg)
def job(k, px, ops):
    raw = ld(1, b"RGBA") + key(2, 0) + vi(S) + key(3, 0) + vi(S) + ld(4, px)
    nodes = [node([], 10, b"")]
    for o in ops:
        prev = len(nodes) - 1
        if o == "kernel":
            m = key(1, 0) + vi(3) + ld(2, b"".join(struct.pack("<d", w) for w in W)) + dbl(3, 9.0) + dbl(4, 3.0)
            nodes.append(node([prev], 26, m))
        elif o == "gauss":
            nodes.append(node([prev], 25, dbl(1, 2.5) + dbl(2, 2.5)))
    return key(2, 0) + vi(k) + ld(3, ld(3, raw)) + b"".join(ld(5, n) for n in nodes)
def rd_vi(b, p):
    n = s = 0
    while True:
        c = b[p]; p += 1; n |= (c & 0x7F) << s; s += 7
        if c < 0x80: return n, p
def fields(b):
    p, out = 0, {}
    while p < len(b):
        k, p = rd_vi(b, p); f, wt = k >> 3, k & 7
        if wt == 0: v, p = rd_vi(b, p)
        elif wt == 1: v = b[p:p + 8]; p += 8
        elif wt == 5: v = b[p:p + 4]; p += 4
        else:
            n, p = rd_vi(b, p); v = b[p:p + n]; p += n
        out.setdefault(f, v)
    return out
px = np.random.default_rng(9).integers(0, 256, S * S * 4, dtype=np.uint8).tobytes()
cases = [(1, ["kernel"]), (2, ["kernel", "gauss"]), (3, ["kernel"]), (4, ["kernel"])]
stream = b"".join(vi(len(m)) + m for m in (job(k, px, ops) for k, ops in cases))
t = time.time()
BK = sys.argv[1] if len(sys.argv) > 1 else "cuda"
p = subprocess.run(["imgbatch", "run", "--backend", BK], input=stream, capture_output=True)
print("imgbatch run --backend", BK, "rc", p.returncode, "%.2fs" % (time.time() - t), p.stderr.decode()[-500:])
base = Image.frombytes("RGBA", (S, S), px)
k1 = base.filter(ImageFilter.Kernel((3, 3), W, scale=9.0, offset=3.0))
want = {1: k1.tobytes(), 3: None, 4: None, 2: k1.filter(ImageFilter.GaussianBlur(2.5)).tobytes()}
want[3] = want[4] = want[1]
pos, ok = 0, 0
while pos < len(p.stdout):
    n, pos = rd_vi(p.stdout, pos); r = fields(p.stdout[pos:pos + n]); pos += n
    k = r.get(4)
    if 6 in r:
        im = fields(r[6])
        eq = im.get(5) == want[k]
        ok += eq
        print("job key", k, "image", im.get(1), im.get(2), im.get(3), "equals Pillow:", eq)
    else:
        print("job key", k, "ERROR", r.get(8))
print("CAPACITY-RUN %d of %d equal Pillow" % (ok, len(cases)))
sys.exit(0 if ok == len(cases) else 1)
