"""The benchmark page gathers what the benchmarks wrote, and only that."""

import json

from benchmarks import report


def test_report_shows_the_sections_whose_figures_exist(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "OUT", tmp_path)
    (tmp_path / "suite.json").write_text(
        json.dumps([{"workers": "serial", "wall_seconds": 236.0, "passed": 161, "exit": 0}])
    )
    page = report.render()
    assert "## Whole e2e suite" in page
    assert "| serial | 236.0 | 161 | 0 |" in page
    assert "## Control plane" not in page  # not measured yet: no section, no made-up figure


def test_the_comparison_reports_each_servers_median_round():
    from benchmarks.agnhost_compare import median_round

    rounds = [
        {"objects_per_second": 5876.0, "latency_ms_p50": 0.17},
        {"objects_per_second": 5011.9, "latency_ms_p50": 0.2},
        {"objects_per_second": 5281.5, "latency_ms_p50": 0.18},
    ]
    median = median_round(rounds)
    assert median["objects_per_second"] == 5281.5
    assert median["latency_ms_p50"] == 0.18  # the latencies of that same round
    assert median["rounds_objects_per_second"] == [5876.0, 5011.9, 5281.5]
