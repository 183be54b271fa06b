"""The checks, each deciding its results from the cluster's answers: ``upgrade`` (with
``upgrade_writes``), ``migration``, ``deprecation``, ``round_trips`` (with
``object_round_trip``), ``schemas_vs_strategy``, ``expectations``, ``conduct``."""
