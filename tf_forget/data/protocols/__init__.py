"""The audit protocols: one module per data-set family (`registry.MODULES`), their types in
`schema`, the registry in `registry`."""
