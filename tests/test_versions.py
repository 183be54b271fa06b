import pytest

from crdharness import versions
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


@pytest.mark.parametrize("bad", ["1.12", "1.36.99", "latest", "2.0"])
def test_unknown_version_fails_at_once_with_the_supported_list(bad):
    with pytest.raises(HarnessError) as info:
        versions.resolve(bad)
    message = str(info.value)
    assert bad in message
    assert "\n" not in message
    for release in versions.SUPPORTED:
        assert release.minor in message


def test_at_least_two_minor_versions_are_supported():
    assert len({r.minor for r in versions.SUPPORTED}) >= 2


def test_staging_modules_share_the_release_minor_and_patch():
    assert versions.resolve("1.37").staging_version == "v0.37.1"
    assert versions.resolve("1.37").git_version == "v1.37.1"
