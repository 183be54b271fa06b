"""The evidence: objects drawn from a schema or mutated from samples (``objects``), schema
readings (``schemas``), what changed between releases (``changes``) and objects built to
hold each change (``targeted``)."""
