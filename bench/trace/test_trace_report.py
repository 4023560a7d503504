#!/usr/bin/env python3
"""bench/reports/trace_report.py on synthetic traces with known overlaps and gaps
(ctest bench/trace_report), and libibtrace.so where CUPTI cannot start
(--no-driver LIB: ctest bench/trace_no_driver). Standard library only."""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORTS = os.path.join(os.path.dirname(HERE), "reports")
sys.path.insert(0, REPORTS)
import trace_report  # noqa: E402

HEADER = "kind,name,stream,thread,start_ns,end_ns,bytes,copy_kind,corr,channel,count\n"


def row(kind, name, t0, t1, stream=-1, thread=-1, nbytes=0, ck="", corr=0):
    return f"{kind},{name},{stream},{thread},{t0},{t1},{nbytes},{ck},{corr},0,1\n"


def h2d(t0, t1, nbytes=1000, stream=1, corr=0):
    return row("memcpy", "pinned>device", t0, t1, stream, -1, nbytes, "HtoD", corr)


def d2h(t0, t1, nbytes=1000, stream=3):
    return row("memcpy", "device>pinned", t0, t1, stream, -1, nbytes, "DtoH")


def kernel(t0, t1, stream=2):
    return row("kernel", "ib_chain", t0, t1, stream, -1, 0, "64x1x1/256x1x1")


def api(name, t0, t1, thread=7, corr=0):
    return row("driver", name, t0, t1, -1, thread, 0, "", corr)


def trailer(records=1, dropped=0, lost=0):
    return (row("meta", "records", 0, 0, nbytes=records) + row("meta", "dropped", 0, 0, nbytes=dropped)
            + row("meta", "lost_buffers", 0, 0, nbytes=lost))


class Report(unittest.TestCase):
    def run_report(self, body, *args, trailer_rows=None):
        """(exit code, stdout + stderr, the JSON report or None)"""
        with tempfile.TemporaryDirectory() as d:
            path, js = os.path.join(d, "t.csv"), os.path.join(d, "t.json")
            with open(path, "w") as f:
                f.write(HEADER + body + (trailer() if trailer_rows is None else trailer_rows))
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                rc = trace_report.main([path, "--json", js, *args])
            o = None
            if os.path.exists(js):
                with open(js) as f:
                    o = json.load(f)
        return rc, out.getvalue(), o

    def test_overlapping_copies_count_once_and_nested_kernels_too(self):
        # H2D [0,100) and [50,150) on two streams: busy 150 of a 200 window, not 200.
        body = (h2d(0, 100) + h2d(50, 150, stream=4) + h2d(190, 200)
                + kernel(20, 120) + kernel(40, 60) + kernel(110, 130))  # nested + chained: 20..130
        rc, _, o = self.run_report(body, "--trim", "0")
        self.assertEqual(rc, 0)
        self.assertEqual(o["wall_us"], 0.2)
        self.assertAlmostEqual(o["busy_pct"]["h2d"], 80.0)  # 150 + 10 of 200
        self.assertAlmostEqual(o["busy_pct"]["kernels"], 55.0)  # 110 of 200
        self.assertEqual(o["h2d_gaps"]["count"], 1)
        self.assertAlmostEqual(o["h2d_gaps"]["max_us"], 0.04)

    def test_both_directions_is_the_intersection(self):
        body = h2d(0, 100) + h2d(100, 200) + d2h(150, 250) + d2h(260, 300) + h2d(290, 400)
        rc, _, o = self.run_report(body, "--trim", "0")  # window 0..400
        self.assertEqual(rc, 0)
        self.assertAlmostEqual(o["both_copy_directions_pct"], 100 * (50 + 10) / 400)
        self.assertAlmostEqual(o["busy_pct"]["d2h"], 100 * 140 / 400)
        self.assertAlmostEqual(o["bytes"]["d2h"], 2000)  # both inside

    def test_gap_names_the_call_in_flight_and_a_late_host(self):
        # Gap [100, 400): thread 7 in cuEventSynchronize over [120, 380), the next
        # upload issued at 390 (after the gap opened): the host was late.
        body = (h2d(0, 100, corr=1) + h2d(400, 500, corr=2) + d2h(100, 300)
                + api("cuMemcpyHtoDAsync", 0, 5, corr=1) + api("cuEventSynchronize", 120, 380)
                + api("cuMemcpyHtoDAsync_v2", 390, 395, corr=2) + api("cuEventQuery", 50, 60, thread=9))
        rc, text, o = self.run_report(body, "--trim", "0")
        self.assertEqual(rc, 0)
        g = o["largest_h2d_gaps"][0]
        self.assertAlmostEqual(g["us"], 0.3)
        self.assertIn("host late", g["cause"])
        self.assertAlmostEqual(g["next_h2d_issued_us"], 0.29)
        self.assertEqual(g["threads"]["7"]["cuEventSynchronize"], {"calls": 1, "us": 0.26})
        self.assertNotIn("9", g["threads"])  # its call ended before the gap
        self.assertEqual(g["last_gpu_op"]["what"], "HtoD")
        self.assertEqual(g["gpu_during"][0]["what"], "DtoH")
        self.assertEqual(o["driving_thread"], 7)
        self.assertEqual(o["threads"]["7"]["apis"]["cuMemcpyHtoDAsync"]["calls"], 2)  # _v2 too
        self.assertEqual(g["next_h2d_api"], "cuMemcpyHtoDAsync")
        self.assertIn("cuEventSynchronize", text)
        self.assertEqual(o["gap_causes"]["host_late"], {"count": 1, "us": 0.3})
        self.assertEqual(o["gap_causes"]["device"]["count"], 0)
        # uploads started 0 and 10 ns after their calls did
        self.assertEqual(o["issue_to_start"]["HtoD"], {"n": 2, "p10_us": 0.0, "p50_us": 0.01, "p90_us": 0.01})

    def test_hand_offs_between_engines(self):
        body = h2d(0, 100) + kernel(130, 200) + d2h(250, 300) + h2d(300, 400)
        rc, _, o = self.run_report(body, "--trim", "0")
        self.assertEqual(rc, 0)
        self.assertAlmostEqual(o["hops"]["h2d_to_kernel"]["p50_us"], 0.03)
        self.assertAlmostEqual(o["hops"]["kernel_to_d2h"]["p50_us"], 0.05)

    def test_an_upload_queued_before_the_gap_is_a_device_wait(self):
        body = (h2d(0, 100, corr=1) + h2d(300, 400, corr=2) + api("cuMemcpyHtoDAsync", 0, 5, corr=1)
                + api("cuMemcpyHtoDAsync", 10, 15, corr=2))
        rc, _, o = self.run_report(body, "--trim", "0")
        self.assertEqual(rc, 0)
        self.assertIn("device", o["largest_h2d_gaps"][0]["cause"])

    def test_profiler_range_then_trim_choose_the_window(self):
        # Warm-up copies outside the cuProfilerStart/Stop range are left out;
        # inside, H2D from 1000 to 2000, trimmed 10 % at each end: 1100..1900.
        body = (h2d(0, 500) + api("cuProfilerStart", 900, 950) + h2d(1000, 1500) + h2d(1600, 2000)
                + api("cuProfilerStop", 2100, 2110) + h2d(3000, 3500))
        rc, _, o = self.run_report(body, "--trim", "0.1", "--images", "2", "--floor-us", "0.5")
        self.assertEqual(rc, 0)
        self.assertEqual((o["window"]["start_ns"], o["window"]["end_ns"]), (1100, 1900))
        self.assertAlmostEqual(o["busy_pct"]["h2d"], 100 * 700 / 800)
        self.assertAlmostEqual(o["range_wall_us"], 1.15)  # 950..2100
        self.assertAlmostEqual(o["range_phases_us"]["before_first_h2d"], 0.05)
        self.assertAlmostEqual(o["range_phases_us"]["after_last_h2d"], 0.1)
        self.assertAlmostEqual(o["per_image_us"]["range"], 0.575)
        self.assertAlmostEqual(o["x_floor"]["range"], 1.15)
        # 800 + 750 of the range's 2000 H2D bytes in the window: 1.55 images in 0.8 us
        self.assertAlmostEqual(o["per_image_us"]["images_in_window"], 1.55)
        self.assertAlmostEqual(o["per_image_us"]["window"], 0.8 / 1.55)

    def test_the_table_has_a_row_per_report(self):
        us = 1000  # the table rounds to us
        body = (h2d(0, 100 * us, corr=1) + h2d(400 * us, 500 * us, corr=2)
                + api("cuMemcpyHtoDAsync", 0, 5 * us, corr=1)
                + api("cuMemcpyHtoDAsync", 390 * us, 395 * us, corr=2))
        with tempfile.TemporaryDirectory() as d:
            csv_path, js = os.path.join(d, "t.csv"), os.path.join(d, "chain5_L.json")
            with open(csv_path, "w") as f:
                f.write(HEADER + body + trailer())
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(trace_report.main([csv_path, "--trim", "0", "--images", "2",
                                                    "--floor-us", "200", "--json", js]), 0)
                self.assertEqual(trace_report.main(["table", js]), 0)
                self.assertEqual(trace_report.main(["table", js, os.path.join(d, "missing.json")]), 1)
        row = [x for x in out.getvalue().splitlines() if x.startswith("| chain5_L")][0]
        self.assertIn("| 1.25x / 1.25x | 40 |", row)  # 250 us an image of a 200 us floor
        self.assertIn("| 300 / 0 |", row)  # the gap's 300 us: the host was late

    def test_window_option_overrides(self):
        rc, _, o = self.run_report(h2d(0, 100) + h2d(200, 300), "--window", "50", "250")
        self.assertEqual(rc, 0)
        self.assertAlmostEqual(o["busy_pct"]["h2d"], 50.0)

    def test_dropped_records_fail(self):
        rc, text, o = self.run_report(h2d(0, 100), trailer_rows=trailer(dropped=3))
        self.assertEqual(rc, 1)
        self.assertIn("DROPPED: 3", text)
        self.assertIsNone(o)
        rc, text, _ = self.run_report(h2d(0, 100), trailer_rows=trailer(lost=1))
        self.assertEqual(rc, 1)

    def test_a_tracer_that_did_not_start_is_an_empty_trace(self):
        err = row("meta", "error: cuptiActivityEnable(kind 4) failed: X (1)", 0, 0)
        rc, text, _ = self.run_report("", trailer_rows=trailer(records=0) + err)
        self.assertEqual(rc, 1)
        self.assertIn("the trace is empty", text)

    def test_a_tracer_error_on_the_way_fails(self):
        err = row("meta", "error: cuptiActivityFlushAll failed: X (1)", 0, 0)
        rc, text, _ = self.run_report(h2d(0, 100), trailer_rows=trailer() + err)
        self.assertEqual(rc, 1)
        self.assertIn("failed on the way", text)

    def test_an_optional_kind_refused_is_a_note_not_a_failure(self):
        skip = "meta,skipped_kind,-1,-1,0,0,0,SYNCHRONIZATION ,0,0,1\n"
        rc, text, o = self.run_report(h2d(0, 100), trailer_rows=trailer() + skip)
        self.assertEqual(rc, 0)
        self.assertIn("without SYNCHRONIZATION records", text)

    def test_a_cut_trace_or_one_without_uploads_fails(self):
        rc, text, _ = self.run_report(h2d(0, 100), trailer_rows="")
        self.assertEqual(rc, 1)
        self.assertIn("cut", text)
        rc, text, _ = self.run_report(kernel(0, 100))
        self.assertEqual(rc, 1)
        self.assertIn("no H2D", text)


def no_driver(lib):
    """The tracer loaded by hand where no driver is: it must say on stderr
    that it is not tracing, write the error and no records, and the report
    must fail calling the trace empty. (Where a driver is, CUPTI may start:
    then the trace has no records, and the report fails the same way.)"""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.csv")
        code = (f"import ctypes; ctypes.CDLL({lib!r}).InitializeInjection(); print('still running')")
        p = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, IB_TRACE_OUT=out),
                           capture_output=True, text=True, timeout=60)
        print(p.stdout + p.stderr, end="")
        assert p.returncode == 0 and "still running" in p.stdout, "the program must run on"
        assert "ib_trace:" in p.stderr, "the tracer must say what happened on stderr"
        rows, meta = trace_report.load(out)
        assert not rows, f"{len(rows)} records in a trace that did not start"
        r = subprocess.run([sys.executable, os.path.join(REPORTS, "trace_report.py"), out],
                           capture_output=True, text=True, timeout=60)
        print(r.stdout + r.stderr, end="")
        assert r.returncode == 1 and "the trace is empty" in r.stderr, "the report must fail: empty"
    print("no-driver: ok")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--no-driver":
        sys.exit(no_driver(sys.argv[2]))
    unittest.main()
