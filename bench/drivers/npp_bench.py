"""NPP kernel-only times on the GPU (CUDA events on one stream around --batch
back-to-back launches, median of --reps batches, after two warm-ups), 4096^2 RGBA (C4) unless --side says otherwise,
for the ops NPP has: the peer of gpu_bench's kernel rows. Python with ctypes
and CuPy (both on the GPU machine) rather than C: NPP's headers are not on
the build machine or in CI, so nothing there needs them, and a changed
signature costs one error row here instead of a crash of gpu_bench. NPP's
ops are not Pillow's (Gaussian 15x15 is NPP's largest mask; box 11x11 is
BoxBlur(5)'s window): reference points, not equivalents. Appends rows
(ms_kernel) to --csv; prints "skipped: ..." without CuPy, a GPU or NPP."""
import argparse
import ctypes as C
import functools
import glob
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402

MASK_3, MASK_15 = 200, 800  # NppiMaskSize NPP_MASK_SIZE_3_X_3, _15_X_15
BORDER_REPLICATE = 2  # NppiBorderType
INTER_NN = 1  # NppiInterpolationMode NPPI_INTER_NN


class Size(C.Structure):
    _fields_ = [("width", C.c_int), ("height", C.c_int)]


class Point(C.Structure):
    _fields_ = [("x", C.c_int), ("y", C.c_int)]


class Rect(C.Structure):
    _fields_ = [("x", C.c_int), ("y", C.c_int), ("width", C.c_int), ("height", C.c_int)]


class StreamCtx(C.Structure):  # NppStreamContext (CUDA 12 and 13)
    _fields_ = [("hStream", C.c_void_p), ("nCudaDeviceId", C.c_int),
                ("nMultiProcessorCount", C.c_int), ("nMaxThreadsPerMultiProcessor", C.c_int),
                ("nMaxThreadsPerBlock", C.c_int), ("nSharedMemPerBlock", C.c_size_t),
                ("nCudaDevAttrComputeCapabilityMajor", C.c_int),
                ("nCudaDevAttrComputeCapabilityMinor", C.c_int), ("nStreamFlags", C.c_uint),
                ("nReserved0", C.c_int)]


def load_npp(libdir):
    libs = {}
    for name in ["nppc", "nppial", "nppif", "nppicc", "nppig", "nppidei"]:
        found = sorted(glob.glob(os.path.join(libdir, f"lib{name}.so*")))
        if not found:
            raise OSError(f"lib{name}.so not in {libdir}")
        libs[name] = C.CDLL(found[0], mode=C.RTLD_GLOBAL)
    return libs


@functools.lru_cache(maxsize=None)
def fn(lib, name, *argtypes):
    """The NPP function with its C signature, looked up once."""
    f = getattr(lib, name)
    f.restype = C.c_int
    f.argtypes = list(argtypes)
    return f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--side", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=9, help="timed batches (median)")
    ap.add_argument("--batch", type=int, default=10, help="launches per timed batch")
    ap.add_argument("--libdir", default="/usr/local/cuda/lib64")
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no GPU")
        libs = load_npp(a.libdir)
    except Exception as e:  # ImportError, CUDARuntimeError, OSError
        print(f"  npp: skipped: {e}", flush=True)
        return
    s = a.side
    P, I, sz, VP = C.c_void_p, C.c_int, Size, C.c_void_p
    stream = cp.cuda.Stream(non_blocking=True)
    props = cp.cuda.runtime.getDeviceProperties(0)
    g = lambda k: props.get(k, props.get(k.encode()))  # noqa: E731 (str keys; bytes in old CuPy)
    ctx = StreamCtx(stream.ptr, 0, g("multiProcessorCount"), g("maxThreadsPerMultiProcessor"),
                    g("maxThreadsPerBlock"), g("sharedMemPerBlock"), g("major"), g("minor"),
                    1, 0)  # cudaStreamNonBlocking
    rng = np.random.default_rng(1)
    src = cp.asarray(rng.integers(0, 256, (s, s, 4), dtype=np.uint8))
    src2 = cp.asarray(rng.integers(0, 256, (s, s, 4), dtype=np.uint8))
    dst = cp.empty((s, s, 4), cp.uint8)
    gray = cp.empty((s, s), cp.uint8)
    kern = cp.asarray([1, 2, 1, 2, 4, 2, 1, 2, 1], dtype=cp.int32)
    step, full = s * 4, Size(s, s)
    inner = Size(s - 2, s - 2)  # median without border handling: the ROI inside
    off = 4 * (s + 1)
    med_buf_n = C.c_uint(0)
    ial, iff, icc, ig, idei = (libs[k] for k in ["nppial", "nppif", "nppicc", "nppig", "nppidei"])
    try:
        fn(iff, "nppiFilterMedianGetBufferSize_8u_C4R_Ctx", sz, sz, C.POINTER(C.c_uint), StreamCtx)(
            inner, Size(3, 3), C.byref(med_buf_n), ctx)
    except Exception as e:
        print(f"  npp: median buffer size: {e}", flush=True)
    med_buf = cp.empty(max(med_buf_n.value, 1), cp.uint8)
    p = lambda arr: arr.data.ptr  # noqa: E731
    cases = [
        ("d2d_copy", "nppidei nppiCopy_8u_C4R", lambda: fn(idei, "nppiCopy_8u_C4R_Ctx", P, I, P, I, sz, StreamCtx)(
            p(src), step, p(dst), step, full, ctx)),
        ("invert", "nppiNot_8u_C4R", lambda: fn(ial, "nppiNot_8u_C4R_Ctx", P, I, P, I, sz, StreamCtx)(
            p(src), step, p(dst), step, full, ctx)),
        ("median3", "nppiFilterMedian_8u_C4R 3x3 (inner ROI)", lambda: fn(
            iff, "nppiFilterMedian_8u_C4R_Ctx", P, I, P, I, sz, sz, Point, VP, StreamCtx)(
            p(src) + off, step, p(dst) + off, step, inner, Size(3, 3), Point(1, 1), p(med_buf), ctx)),
        ("gauss8", "nppiFilterGaussBorder_8u_C4R 15x15 (largest NPP mask; not GaussianBlur(8))",
         lambda: fn(iff, "nppiFilterGaussBorder_8u_C4R_Ctx", P, I, sz, Point, P, I, sz, I, I, StreamCtx)(
            p(src), step, full, Point(0, 0), p(dst), step, full, MASK_15, BORDER_REPLICATE, ctx)),
        ("gauss2", "nppiFilterGaussBorder_8u_C4R 3x3", lambda: fn(
            iff, "nppiFilterGaussBorder_8u_C4R_Ctx", P, I, sz, Point, P, I, sz, I, I, StreamCtx)(
            p(src), step, full, Point(0, 0), p(dst), step, full, MASK_3, BORDER_REPLICATE, ctx)),
        ("box5", "nppiFilterBoxBorder_8u_C4R 11x11", lambda: fn(
            iff, "nppiFilterBoxBorder_8u_C4R_Ctx", P, I, sz, Point, P, I, sz, sz, Point, I, StreamCtx)(
            p(src), step, full, Point(0, 0), p(dst), step, full, Size(11, 11), Point(5, 5),
            BORDER_REPLICATE, ctx)),
        ("kernel3", "nppiFilterBorder_8u_C4R 3x3 /16", lambda: fn(
            iff, "nppiFilterBorder_8u_C4R_Ctx", P, I, sz, Point, P, I, sz, P, sz, Point, I, I, StreamCtx)(
            p(src), step, full, Point(0, 0), p(dst), step, full, p(kern), Size(3, 3), Point(1, 1), 16,
            BORDER_REPLICATE, ctx)),
        ("convert_l", "nppiRGBToGray_8u_AC4C1R", lambda: fn(
            icc, "nppiRGBToGray_8u_AC4C1R_Ctx", P, I, P, I, sz, StreamCtx)(
            p(src), step, p(gray), s, full, ctx)),
        ("resize_half", "nppiResize_8u_C4R nearest", lambda: fn(
            ig, "nppiResize_8u_C4R_Ctx", P, I, sz, Rect, P, I, sz, Rect, I, StreamCtx)(
            p(src), step, full, Rect(0, 0, s, s), p(dst), step // 2, Size(s // 2, s // 2),
            Rect(0, 0, s // 2, s // 2), INTER_NN, ctx)),
        ("transpose", "nppiTranspose_8u_C4R", lambda: fn(
            idei, "nppiTranspose_8u_C4R_Ctx", P, I, P, I, sz, StreamCtx)(
            p(src), step, p(dst), step, full, ctx)),
        ("add", "nppiAdd_8u_C4RSfs", lambda: fn(
            ial, "nppiAdd_8u_C4RSfs_Ctx", P, I, P, I, P, I, sz, I, StreamCtx)(
            p(src), step, p(src2), step, p(dst), step, full, 0, ctx)),
    ]
    start, end = cp.cuda.Event(), cp.cuda.Event()
    rows = []
    for wid, what, call in cases:
        try:
            for _ in range(2):
                st = call()
                if st < 0:
                    raise RuntimeError(f"NppStatus {st}")
            # Back-to-back launches between the events, so that the host's
            # launch overhead overlaps the kernels instead of adding to them.
            times = []
            for _ in range(a.reps):
                start.record(stream)
                for _ in range(a.batch):
                    call()
                end.record(stream)
                end.synchronize()
                times.append(cp.cuda.get_elapsed_time(start, end) / a.batch)
            ms = statistics.median(times)
            rows.append(csvrows.row("kernels", "npp", wid, "RGBA", s, a.reps * a.batch, "ms_kernel", ms, "ms",
                                    note=what))
            print(f"  npp: {wid} {s}^2 RGBA: {ms:.4f} ms ({what})", flush=True)
        except Exception as e:
            rows.append(csvrows.row("kernels", "npp", wid, "RGBA", s, 0, "ms_kernel", "", "ms",
                                    status="error", note=f"{what}: {e}"[:200]))
            print(f"  npp: {wid}: error: {e}", flush=True)
    csvrows.append(a.csv, rows)


if __name__ == "__main__":
    main()
