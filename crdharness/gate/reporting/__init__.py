"""What is reported: report.md and report.json (``report``) and workflow annotations
(``annotations``)."""
