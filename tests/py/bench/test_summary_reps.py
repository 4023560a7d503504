"""bench/reports/summary.py's >= 2048² rows: a case gpu_bench timed several times (--reps) shows its
median, and the worst case names its spread (the _min/_max rows of the same setting)."""
import sys

from summary_out import LIB, summary_line

sys.path.insert(0, LIB)
import csvrows  # noqa: E402

SETTING = "max_jobs=64 max_in_flight=2"


def api(workload, metric, value, n=192):
    return csvrows.row("api", "imgbatch-api-cuda", workload, "L", 2048, n, metric, value, "x", setting=SETTING)


def bidir_rows(tmp_path, rows):
    csvrows.append(str(tmp_path / "api.csv"), rows)
    return summary_line(tmp_path, lambda r: "both-directions floor" in r and "default caps" in r)


def test_the_worst_case_names_its_spread(tmp_path):
    row = bidir_rows(tmp_path, [
        api("invert", "x_floor_bidir", 1.05),
        api("transpose", "x_floor_bidir", 1.09),
        api("transpose", "x_floor_bidir_min", 1.04, n=3),
        api("transpose", "x_floor_bidir_max", 1.31, n=3),
    ])
    assert "worst 1.090 x" in row and "transpose L 2048²" in row, row
    assert "median of 3 streams, 1.040-1.310x" in row, row
    assert "missed" not in row, row


def test_a_single_stream_shows_no_spread(tmp_path):
    row = bidir_rows(tmp_path, [api("invert", "x_floor_bidir", 1.12)])
    assert "median of" not in row and "missed" in row, row


def small_row(tmp_path, values, setting="max_jobs=64 max_in_flight=2"):
    csvrows.append(str(tmp_path / "api.csv"), [
        csvrows.row("api", "imgbatch-api-cuda-batched", "invert", "RGB", 256, 64, "img_per_s", float(v), "img/s",
                    setting=setting) for v in values] + [api("invert", "x_floor_bidir", 1.05)])  # a cuda run
    return summary_line(tmp_path, lambda r: r.startswith("256² RGB invert through the API, default caps"))


def test_256_is_the_median_of_its_processes(tmp_path):
    # The best process alone (250k) would meet the target; the median (195k) does not.
    row = small_row(tmp_path, [190000, 250000, 195000])
    assert "195,000 /s, median of 3 processes (190,000-250,000 /s)" in row, row
    assert "missed by 5,000" in row, row


def test_256_one_process(tmp_path):
    row = small_row(tmp_path, [205000])
    assert "205,000 /s" in row and "median of" not in row and "met" in row, row


def test_a_case_in_several_processes_is_their_median(tmp_path):
    # Three processes of one setting: 1.05 alone would meet the target, their median 1.12 not.
    row = bidir_rows(tmp_path, [api("point", "x_floor_bidir", v) for v in (1.20, 1.05, 1.12)])
    assert "worst 1.120 x" in row and "point L 2048², median of 3 processes" in row, row
    assert "missed" in row, row
