"""What a report line says of many differences (``diff.said``) and how long any line of
report.md may be (``reporting.capped``): a list that grew is said as growth, never as ten
thousand losses, and nothing cut goes without a word."""

from crdharness.gate import diff
from crdharness.gate.reporting import capped


def test_items_appended_to_a_list_are_said_as_the_list_growing():
    before = {"spec": {"owners": [{"operations": ["List", "Get"]}]}}
    after = {"spec": {"owners": [{"operations": ["List", "Get"] * 5000}]}}
    found = diff.differences(before, after)
    assert len(found) == 9998
    said = diff.said(found)
    assert said == "spec.owners[0].operations grew from 2 to 10000 items", said
    assert diff.loses_or_changes(found) == "changes"


def test_items_of_a_grown_list_that_changed_are_counted_with_its_growth():
    before = {"spec": {"ops": ["List", "Get", "Get"]}}
    after = {"spec": {"ops": ["List", "List", "List", "Get", "Get", "Get"]}, "x": 1}
    found = diff.differences(before, after)
    said = diff.said(found)
    assert said == "spec.ops grew from 3 to 6 items (2 of the items kept changed), x", said


def test_items_cut_from_a_list_are_said_as_the_list_shrinking_and_lost_only_then():
    before = {"spec": {"hosts": ["a", "b", "c", "d"], "port": 80}}
    after = {"spec": {"hosts": ["a"]}}
    found = diff.differences(before, after)
    assert diff.said(found) == "spec.hosts shrank from 4 to 1 items, spec.port"
    assert diff.loses_or_changes(found) == "loses"


def test_past_the_limit_a_line_says_how_many_more_paths_it_names():
    before = {"spec": {f"f{i}": i for i in range(12)}}
    found = diff.differences(before, {"spec": {}})
    said = diff.said(found, limit=3)
    assert said == "spec.f0, spec.f1, spec.f2, and 9 more paths", said


def test_a_report_line_past_its_limit_is_cut_saying_how_much_and_how_many_paths():
    line = "lost " + ", ".join(f"spec.items[{i}]" for i in range(1000))
    cut = capped.line(line, limit=100)
    assert cut.startswith(line[:100] + "… (cut: ")
    assert f"{len(line) - 100} more characters" in cut
    rest = line[100:]
    assert f"naming {len(diff.named_paths(rest))} more paths" in cut, cut
    assert len(diff.named_paths(rest)) > 900
    assert len(cut) < 200
    assert capped.line("short") == "short"
    assert capped.lines("a\n" + "x" * 50, limit=10).split("\n")[0] == "a"


def test_an_objects_yaml_in_report_md_is_cut_saying_how_many_lines_more():
    text = "\n".join(f"- List {i}" for i in range(1000))
    cut = capped.block(text, limit=10).split("\n")
    assert cut[:10] == text.split("\n")[:10]
    assert cut[10] == "# … 990 more lines (objects/ has the whole object)"
    assert len(cut) == 11
    assert capped.block("a: 1") == "a: 1"


def test_a_list_grown_again_by_the_same_write_is_told_apart_from_a_loss_in_it():
    from crdharness.gate.checks.upgrade_objects import Written
    from crdharness.gate.checks.upgrade_rewrites import _grown_again

    ops = "spec.owners[].proxySettings[].operations"
    first = diff.differences(
        {"spec": {"owners": [{"proxySettings": [{"operations": ["List", "Get"]}]}]}},
        {"spec": {"owners": [{"proxySettings": [{"operations": ["List", "List", "Get"]}]}]}},
    )
    assert diff.grown_lists(first) == {ops}
    obj = Written("tenants.example.com", "v1", "t", None, grown={("v1alpha1", ops)})
    again = diff.differences(
        {"spec": {"owners": [{"proxySettings": [{"operations": ["List", "Get"]}]}], "x": 1}},
        {"spec": {"owners": [{"proxySettings": [{"operations": ["Get", "List", "Get"]}]}]}},
    )
    grown = _grown_again(obj, "v1alpha1", again)
    assert {d.path for d in grown} == {
        f"spec.owners[0].proxySettings[0].operations[{i}]" for i in range(3)
    }
    assert [d.path for d in again if d not in grown] == ["spec.x"]  # a loss stays one
    assert _grown_again(obj, "v1beta1", again) == []  # not grown by that write before
    shrunk = diff.differences(
        {"spec": {"owners": [{"proxySettings": [{"operations": ["List", "Get"]}]}]}},
        {"spec": {"owners": [{"proxySettings": [{"operations": ["List"]}]}]}},
    )
    assert _grown_again(obj, "v1alpha1", shrunk) == []
