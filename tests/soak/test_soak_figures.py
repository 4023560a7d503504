"""The soak's verdicts (soak_figures.judge): a figure that grows after the
warm-up fails by name; noise within 5 %, a fall, and warm-up growth pass."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_figures as figs  # noqa: E402

TOTAL = 1000


def series(value_at):
    """A sample every 10 jobs; value_at(answered) gives every flat figure."""
    return [{"answered": n, **{f: value_at(n) for f in figs.FLAT}} for n in range(0, TOTAL, 10)]


def verdicts(samples):
    return {v["figure"]: v["verdict"] for v in figs.judge(samples, TOTAL)}


def test_a_figure_that_grows_a_little_per_job_is_named():
    v = verdicts(series(lambda n: 100 + 0.05 * n))  # +50 % over the run
    assert set(v.values()) == {"GREW"}


def test_growth_within_the_warm_up_and_noise_within_five_percent_pass():
    v = verdicts(series(lambda n: (50 + n if n < 100 else 150) * (1.04 if n % 20 else 1.0)))
    assert set(v.values()) == {"flat"}


def test_a_fall_is_shown_but_is_no_leak():
    v = verdicts(series(lambda n: 200 if n < 500 else 100))
    assert set(v.values()) == {"fell"}


def test_a_run_with_no_samples_in_a_quarter_cannot_pass():
    v = verdicts([s for s in series(lambda n: 1) if not 750 <= s["answered"]])
    assert set(v.values()) == {"TOO FEW SAMPLES"}


def capped(value_at, cap):
    rows = series(value_at)
    for r in rows:
        r.update({c: cap for c in figs.CAPPED.values()})
    return rows


def test_a_cache_filling_towards_its_cap_is_bounded_and_past_it_grew():
    # every figure climbs through the run (a cache filling as new sizes come)
    v = verdicts(capped(lambda n: 100 + 0.05 * n, 160))
    for f in figs.CAPPED:
        assert v[f] == "bounded", f
    assert v["fds"] == v["threads"] == v["rss_net_mb"] == "GREW"  # no cap: a leak
    assert v["rss_mb"] == "GREW"  # the heap grew with it
    v = verdicts(capped(lambda n: 100 + 0.05 * n, 140))  # the peak passes the cap
    assert all(v[f] == "GREW" for f in figs.CAPPED)


def test_a_cache_whose_worker_reports_no_cap_must_be_flat():
    # caps come from the scrape only: a worker without the cap gauges adds 0
    m = {"imgbatch_module_cache_bytes": 3 * figs.MB, "imgbatch_disk_cache_bytes": 5 * figs.MB}
    f = figs.metric_figures(m)
    assert f["module_mb"] == 3 and f["disk_cache_mb"] == 5
    assert f["cap_module_mb"] == f["cap_disk_mb"] == 0
    f = figs.metric_figures({**m, "imgbatch_module_cache_cap_bytes": 7 * figs.MB,
                             "imgbatch_disk_cache_cap_bytes": 11 * figs.MB})
    assert (f["cap_module_mb"], f["cap_disk_mb"]) == (7, 11)
    v = verdicts(capped(lambda n: 100 + 0.05 * n, 0))
    assert all(v[f] == "GREW" for f in figs.CAPPED)


def test_rss_and_the_module_count_follow_what_they_are_made_of():
    def at(n):
        return lambda f: 100.0 if f in ("rss_net_mb", "device_net_mb", "fds", "threads") else 100 + 0.05 * n
    rows = [{"answered": n, **{f: at(n)(f) for f in figs.FLAT},
             **{c: 1000.0 for c in figs.CAPPED.values()}} for n in range(0, TOTAL, 10)]
    v = verdicts(rows)
    assert v["rss_mb"] == v["device_mb"] == v["modules"] == "bounded"
    assert v["rss_net_mb"] == "flat"


def test_with_restarts_whole_periods_are_compared_so_a_saw_tooth_is_flat():
    total, restarts = 1000, 5
    interval = total / (restarts + 1)  # a restart every 166.7 jobs, the two workers in turn
    period = 2 * interval
    (a, b), (c, d) = figs.windows(total, period)
    assert (round(a), round(b), round(c), round(d)) == (333, 667, 667, 1000)

    def tooth(n):  # a restart empties one worker, which fills again; the two differ
        return 100 + 40 * ((n % interval) / interval) + (25 if (n // interval) % 2 else 0)
    rows = [{"answered": n, **{f: tooth(n) for f in figs.FLAT}} for n in range(0, total, 2)]
    # quarters hold different phases of the saw-tooth and see growth that is not there
    assert {v["verdict"] for v in figs.judge(rows, total)} == {"GREW"}
    assert {v["verdict"] for v in figs.judge(rows, total, period)} == {"flat"}
    rows = [{"answered": n, **{f: tooth(n) + 0.05 * n for f in figs.FLAT}} for n in range(0, total, 2)]
    assert {v["verdict"] for v in figs.judge(rows, total, period)} == {"GREW"}  # a leak under it


def test_with_quarters_of_whole_periods_the_quarters_are_compared():
    """2 workers, 7 restarts: a period (both workers restarted once) is 250
    of 1000 jobs, a quarter exactly: the quarters hold the same phases, and
    each window's median is over a whole period (with 15 restarts, two)."""
    total, restarts = 1000, 7
    interval = total / (restarts + 1)
    period = 2 * interval
    assert figs.windows(total, period) == ((250, 500), (750, 1000))
    assert "(quarters, 1 whole restart period each)" in figs.windows_text(total, period)
    assert "(quarters, 2 whole restart periods each)" in figs.windows_text(2000, 250)
    assert "(whole restart periods)" in figs.windows_text(1000, 1000 / 3)

    def tooth(n):
        return 100 + 40 * ((n % interval) / interval) + (25 if (n // interval) % 2 else 0)
    rows = [{"answered": n, **{f: tooth(n) for f in figs.FLAT}} for n in range(0, total, 2)]
    assert {v["verdict"] for v in figs.judge(rows, total, period)} == {"flat"}
    rows = [{"answered": n, **{f: tooth(n) + 0.05 * n for f in figs.FLAT}} for n in range(0, total, 2)]
    assert {v["verdict"] for v in figs.judge(rows, total, period)} == {"GREW"}
