"""Failure bundles of runs failing in the same second (parallel sessions sharing one
artifacts directory, as the sabotage run does) never share a directory."""

from __future__ import annotations

from crdharness.reports import bundle


def test_bundles_of_the_same_second_get_their_own_directories(tmp_path):
    name = "failure-bundle-20261128-120000"
    first = bundle._new_directory(tmp_path / "artifacts", name)
    second = bundle._new_directory(tmp_path / "artifacts", name)
    third = bundle._new_directory(tmp_path / "artifacts", name)
    assert first.name == name
    assert [second.name, third.name] == [f"{name}-2", f"{name}-3"]
    assert all(p.is_dir() for p in (first, second, third))
