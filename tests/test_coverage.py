"""The behaviour catalogue and the suite stay in step."""

from pathlib import Path

from crdharness.reports import coverage

SHARED = coverage.ROOT.parent / "shared" / "spec" / "behaviours.md"


def test_catalogue_copy_matches_the_shared_spec_when_present():
    if SHARED.exists():  # a fresh clone for users has only the copy
        assert SHARED.read_text() == coverage.CATALOGUE.read_text()
    assert coverage.CATALOGUE.exists()


def test_catalogue_is_parsed_completely():
    ids = [b.id for b in coverage.catalogue()]
    assert len(ids) == len(set(ids)) == 227
    assert {"VW-01", "HS-7", "PP-44", "NT-07"} <= set(ids)


def test_every_testable_behaviour_of_groups_a_to_p_is_covered_or_explained():
    report = coverage.report()
    assert [b.id for b in report.missing] == []
    assert report.unknown == []


def test_report_renders_a_table(tmp_path: Path):
    text = coverage.report().render()
    assert text.startswith("| group | behaviours | covered | explained | missing |")
    assert "| all | 227 |" in text
