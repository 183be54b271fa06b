"""The phases, each a ``run(ctx)`` that drives its checks in order: ``history``,
``candidate``, ``kubernetes_upgrade``; ``runner`` runs each once and decides every planned
check."""
