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
