"""The report's units (`tf_forget.report.unit`), one module per part of the report; their order
is `registry.UNITS`."""
