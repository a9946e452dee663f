"""A module whose import fails: a pool that preloads it must leave the error to the task."""

raise RuntimeError("broken on import")
