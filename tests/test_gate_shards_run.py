"""``gate --shard K/N`` on a real control plane, merged by ``gate-merge``: the same verdict,
exit status, report.md, report.json and objects as one machine gating every CRD.

Three examples' CRDs (three API groups) released together, one of them breaking (a new
required field): one run of all, then two shards, each on a control plane of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.gate_cli import gate_merge, report_of, run_gate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "gate"
pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# What the API server gives each object (and the order of its managedFields entries, by
# the moment of each write): different in any two runs, one machine's or not.
VOLATILE = re.compile(r"^\s*(creationTimestamp|resourceVersion|uid):")


def stable(markdown: str) -> list[str]:
    """report.md without what the server stamps; each shown object's lines sorted."""
    out: list[str] = []
    block: list[str] | None = None
    for line in markdown.splitlines():
        if line == "```yaml":
            block = []
        elif line == "```" and block is not None:
            out += ["```yaml", *sorted(block), "```"]
            block = None
        elif block is not None:
            if not VOLATILE.match(line):
                block.append(line)
        else:
            out.append(line)
    return out


def test_two_shards_merged_give_what_one_machine_gives(tmp_path):
    gate_file = tmp_path / "gate.yaml"
    first = [EXAMPLES / f for f in ("lamps", "narrowed", "tightened")]
    gate_file.write_text(
        "crds:\n"
        f"  - [{first[0]}/release-1.yaml, {first[1]}/release-1.yaml, {first[2]}/release-1.yaml]\n"
        f"  - [{first[0]}/release-2-described.yaml, {first[1]}/release-2-required.yaml, "
        f"{first[2]}/release-2-compatible.yaml]\n"
        f"samples: [{first[0]}/sample.yaml, {first[1]}/sample.yaml, {first[2]}/sample.yaml]\n"
    )
    whole = run_gate(gate_file, tmp_path / "one", cwd=tmp_path)
    one = report_of(whole, tmp_path / "one" / "report.json")
    assert whole.returncode == 1 and one["verdict"] == "FAIL", whole.stdout[-3000:]
    codes = []
    for k in (1, 2):
        shard = run_gate(gate_file, tmp_path / f"shard-{k}", "--shard", f"{k}/2", cwd=tmp_path)
        report_of(shard, tmp_path / f"shard-{k}" / "report.json")
        codes.append(shard.returncode)
    assert sorted(codes) == [0, 1]  # the break is in one share: groups stay whole
    merged = gate_merge(tmp_path, 2)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert "2 shards, verdict: FAIL" in merged.stdout
    both = json.loads((tmp_path / "merged" / "report.json").read_text())
    for key in set(one) | set(both):
        if key not in ("seconds", "shard"):  # the time each took; which shards made it
            assert both.get(key) == one.get(key), key
    assert stable((tmp_path / "merged" / "report.md").read_text()) == stable(
        (tmp_path / "one" / "report.md").read_text()
    )
    assert sorted(p.name for p in (tmp_path / "merged" / "objects").iterdir()) == sorted(
        p.name for p in (tmp_path / "one" / "objects").iterdir()
    )
