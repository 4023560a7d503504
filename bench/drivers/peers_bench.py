"""Peers of the API matrix, labelled "not bit-exact": OpenCV on the CPU (its
own threads) and torchvision/torch on the GPU, end to end with PCIe (raw
HWC bytes in host memory -> device -> op -> host bytes, synchronised per
image), wherever an equivalent op exists. Each case runs about --budget
seconds after one warm-up image. Appends ms_per_img / img_per_s rows to --csv;
prints "skipped: ..." when the library or the GPU is missing."""
import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))
import csvrows  # noqa: E402
import workloads as W  # noqa: E402


def opencv_ops(cv2):
    lut = np.array(W.LUT, dtype=np.uint8)
    k3 = np.array(W.KERNEL3, dtype=np.float32).reshape(3, 3) / 16
    gray = {"RGB": cv2.COLOR_RGB2GRAY, "RGBA": cv2.COLOR_RGBA2GRAY}
    return {
        "point": lambda a, b, m: cv2.LUT(a, lut),
        "invert": lambda a, b, m: cv2.bitwise_not(a),
        "convert_l": lambda a, b, m: cv2.cvtColor(a, gray[m]) if m in gray else None,
        "median3": lambda a, b, m: cv2.medianBlur(a, 3),
        "kernel3": lambda a, b, m: cv2.filter2D(a, -1, k3),
        "gauss2": lambda a, b, m: cv2.GaussianBlur(a, (0, 0), 2),
        "gauss8": lambda a, b, m: cv2.GaussianBlur(a, (0, 0), 8),
        "box5": lambda a, b, m: cv2.blur(a, (11, 11)),
        "resize_half": lambda a, b, m: cv2.resize(a, (a.shape[1] // 2, a.shape[0] // 2),
                                                  interpolation=cv2.INTER_NEAREST),
        "transpose": lambda a, b, m: cv2.transpose(a),
        "add": lambda a, b, m: cv2.add(a, b),
        "blend": lambda a, b, m: cv2.addWeighted(a, 0.5, b, 0.5, 0),
    }


def torch_ops(torch):
    import torchvision.transforms.v2.functional as F
    from torchvision.transforms import InterpolationMode
    dev = torch.device("cuda")
    lut = torch.tensor(W.LUT, dtype=torch.uint8, device=dev)
    k3 = torch.tensor(W.KERNEL3, dtype=torch.float32, device=dev).reshape(1, 1, 3, 3) / 16

    def chw(t):  # HWC (or HW) -> CHW view
        return t.unsqueeze(0) if t.dim() == 2 else t.permute(2, 0, 1)

    def gauss(r):
        k = 2 * math.ceil(3 * r) + 1
        return lambda a, b, m: F.gaussian_blur(chw(a), [k, k], [r, r])

    def conv(a, weight, pad):
        x = chw(a).float().unsqueeze(0)
        c = x.shape[1]
        y = torch.nn.functional.conv2d(x, weight.expand(c, 1, -1, -1).contiguous(), padding=pad,
                                       groups=c)
        return y.round_().clamp_(0, 255).to(torch.uint8)[0]

    box = torch.full((1, 1, 11, 11), 1 / 121, device=dev)
    return {
        "point": lambda a, b, m: lut[a.long()],
        "invert": lambda a, b, m: F.invert(chw(a)),
        "convert_l": lambda a, b, m: F.rgb_to_grayscale(chw(a)[:3]) if m != "L" else None,
        "kernel3": lambda a, b, m: conv(a, k3, 1),
        "gauss2": gauss(2),
        "gauss8": gauss(8),
        "box5": lambda a, b, m: conv(a, box, 5),
        "resize_half": lambda a, b, m: F.resize(chw(a), [a.shape[0] // 2, a.shape[1] // 2],
                                                interpolation=InterpolationMode.NEAREST),
        "transpose": lambda a, b, m: chw(a).transpose(-1, -2).contiguous(),
        "add": lambda a, b, m: (a.to(torch.int16) + b).clamp_(max=255).to(torch.uint8),
        "blend": lambda a, b, m: torch.lerp(a.float(), b.float(), 0.5).round_().to(torch.uint8),
    }


def timed(step, budget, max_n):
    step()  # warm-up: kernels, allocator, plans
    times = []
    t_end = time.perf_counter() + budget
    while len(times) < max_n and (not times or time.perf_counter() < t_end):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--impl", required=True, choices=["opencv", "torchvision"])
    ap.add_argument("--grid", required=True)
    ap.add_argument("--budget", type=float, default=0.2)
    ap.add_argument("--max-n", type=int, default=500)
    ap.add_argument("--csv", required=True)
    a = ap.parse_args()
    try:
        if a.impl == "opencv":
            import cv2
            ops, impl, version = opencv_ops(cv2), "opencv-cpu", f"OpenCV {cv2.__version__}"
        else:
            import torch
            import torchvision
            if not torch.cuda.is_available():
                print("  peers: torchvision: skipped: no GPU", flush=True)
                return
            ops, impl = torch_ops(torch), "torchvision-cuda"
            version = f"torch {torch.__version__}, torchvision {torchvision.__version__}"
    except ImportError as e:
        print(f"  peers: {a.impl}: skipped: {e}", flush=True)
        return
    note = f"not bit-exact; {version}"
    for wid, mode, side in W.parse_grid(a.grid):
        op = ops.get(wid)
        if op is None:
            continue
        shape = (side, side) if mode == "L" else (side, side, W.BANDS[mode])
        raws = [W.sample(mode, side, s) for s in range(2)]
        if a.impl == "opencv":
            arrs = [np.frombuffer(r, np.uint8).reshape(shape) for r in raws]
            if op(arrs[0], arrs[1], mode) is None:
                continue

            def step():
                x = np.frombuffer(raws[0], np.uint8).reshape(shape)
                y = np.frombuffer(raws[1], np.uint8).reshape(shape)
                op(x, y, mode).tobytes()
        else:
            arrs = [np.frombuffer(r, np.uint8).reshape(shape).copy() for r in raws]
            if wid == "convert_l" and mode == "L":
                continue

            two = W.WORKLOADS[wid][2]

            def step():
                x = torch.from_numpy(arrs[0]).cuda()
                y = torch.from_numpy(arrs[1]).cuda() if two else None
                out = op(x, y, mode)
                out.cpu().numpy().tobytes()  # synchronises
        try:
            t, n = timed(step, a.budget, a.max_n)
        except Exception as e:  # a peer's failure is reported, never fatal
            csvrows.append(a.csv, [csvrows.row("peers", impl, wid, mode, side, 0, "ms_per_img", "",
                                               "ms", status="error", note=str(e)[:200])])
            print(f"  peers: {impl} {wid} {mode} {side}^2: error: {e}", flush=True)
            continue
        csvrows.append(a.csv, [
            csvrows.row("peers", impl, wid, mode, side, n, "ms_per_img", t * 1e3, "ms", note=note),
            csvrows.row("peers", impl, wid, mode, side, n, "img_per_s", 1 / t, "img/s", note=note)])
        print(f"  peers: {impl} {wid} {mode} {side}^2: {t * 1e3:.3f} ms/img", flush=True)


if __name__ == "__main__":
    main()
