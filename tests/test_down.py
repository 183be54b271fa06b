"""``crdharness down`` lists the kept clusters and stops none unless told which (or
``--all``): another run, or another user's, may be using one."""

from __future__ import annotations

import tempfile

from crdharness import cli, workspace


def test_down_lists_kept_clusters_and_stops_only_those_named_or_all(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # kept clusters of this test only
    assert tempfile.gettempdir() == str(tmp_path)
    kept = []
    for _ in range(3):  # no processes: stopping one only removes its workspace
        space = workspace.Workspace(base=tmp_path)
        space.keep()
        kept.append(space.path)
    (kept[0] / "kubeconfig").write_text("apiVersion: v1\n")

    assert cli.main(["down"]) == 0
    said = capsys.readouterr().out
    assert said.startswith("kept clusters (3), none stopped:"), said
    assert f"  {kept[0]}  KUBECONFIG={kept[0] / 'kubeconfig'}" in said.splitlines()
    assert all(str(path) in said for path in kept) and all(path.is_dir() for path in kept)

    assert cli.main(["down", str(kept[1])]) == 0
    assert capsys.readouterr().out == f"stopped {kept[1]}\n"
    assert not kept[1].exists() and kept[0].is_dir() and kept[2].is_dir()

    assert cli.main(["down", "--all"]) == 0
    assert sorted(capsys.readouterr().out.splitlines()) == sorted(
        f"stopped {path}" for path in (kept[0], kept[2])
    )
    assert not any(path.exists() for path in kept)
    assert cli.main(["down"]) == 0
    assert capsys.readouterr().out == "no kept clusters\n"
