"""One run's state: the checks a gate file plans (``plan``) and ``GateContext``
(``context``), what every phase and check reads and writes."""
