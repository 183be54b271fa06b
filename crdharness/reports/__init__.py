"""What a run leaves for people: the behaviour coverage of the catalogue (``coverage``) and the
failure bundle (``bundle``). The JUnit properties come from ``pytest_plugin.reporting``."""
