import pytest

from crdharness.binaries import versions
from crdharness.errors import HarnessError


def test_default_is_the_newest_supported_release(monkeypatch):
    monkeypatch.delenv(versions.ENV_VAR, raising=False)
    assert versions.resolve() == versions.SUPPORTED[0]


@pytest.mark.parametrize("spelling", ["1.36", "v1.36", "1.36.4", "v1.36.4", " 1.36 "])
def test_a_release_is_named_by_minor_or_full_version(spelling):
    assert versions.resolve(spelling).kubernetes == "1.36.4"


def test_environment_variable_selects_the_release(monkeypatch):
    monkeypatch.setenv(versions.ENV_VAR, "1.36")
    assert versions.resolve().minor == "1.36"


def test_explicit_name_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv(versions.ENV_VAR, "1.36")
    assert versions.resolve("1.37").minor == "1.37"


@pytest.mark.parametrize("bad", ["1.12", "1.33", "1.36.99", "latest", "2.0"])
def test_unknown_version_fails_at_once_with_the_supported_list(bad):
    with pytest.raises(HarnessError) as info:
        versions.resolve(bad)
    message = str(info.value)
    assert bad in message
    assert "\n" not in message
    for release in versions.SUPPORTED:
        assert release.minor in message


def test_three_consecutive_minor_versions_or_more_are_supported():
    minors = sorted(r.minor_number for r in versions.SUPPORTED)
    assert len(minors) >= 3
    assert minors == list(range(minors[0], minors[0] + len(minors)))


def test_staging_modules_share_the_release_minor_and_patch():
    assert versions.resolve("1.37").staging_version == "v0.37.2"
    assert versions.resolve("1.37").git_version == "v1.37.2"


@pytest.mark.parametrize(
    ("minor", "api", "apiserver_flags", "controller_manager_flags"),
    [
        ("1.37", "v1", [], []),
        (
            "1.36",
            "v1beta1",
            [
                "--feature-gates=StorageVersionMigrator=true",
                "--runtime-config=storagemigration.k8s.io/v1beta1=true",
            ],
            ["--feature-gates=StorageVersionMigrator=true"],
        ),
        (
            "1.34",
            "v1alpha1",
            [
                "--feature-gates=StorageVersionMigrator=true",
                "--runtime-config=storagemigration.k8s.io/v1alpha1=true",
            ],
            ["--feature-gates=StorageVersionMigrator=true,InformerResourceVersion=true"],
        ),
    ],
)
def test_the_builtin_storage_migration_is_switched_on_where_it_is_not_ga(
    minor, api, apiserver_flags, controller_manager_flags
):
    release = versions.resolve(minor)
    assert release.storage_migration_api == api
    assert release.storage_migration_apiserver_flags == apiserver_flags
    assert release.storage_migration_controller_manager_flags == controller_manager_flags


def test_upgrade_pairs_cover_every_adjacent_pair_over_the_matrix():
    from crdharness.backends.upgrade import upgrade_pair

    pairs = {tuple(r.minor for r in upgrade_pair(release)) for release in versions.SUPPORTED}
    assert pairs == {("1.34", "1.35"), ("1.35", "1.36"), ("1.36", "1.37")}
    assert [r.minor for r in upgrade_pair(versions.resolve("1.37"))] == ["1.36", "1.37"]
    assert [r.minor for r in upgrade_pair(versions.resolve("1.34"))] == ["1.34", "1.35"]
