"""tf_forget.report: a run's predictions -> report.json, tables/*.csv and report.html.

Modules, in the order the data flows: collect (predictions aligned on ids + data set facts)
and pairing (which dense member each member is compared with), measures and groups (every
measure of `tf_forget.stats` that applies), plots and gallery (PNG bytes), html and sections
(the self-contained page), write (`write_report`, atomic artifacts). Schema:
docs/artifacts/report.md.
"""
