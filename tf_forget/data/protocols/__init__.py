"""The audit protocols: one module per data-set family (`protocol_registry.MODULES`), their
types in `schema`, the registry in `protocol_registry`."""
