"""Built-in frontends (registered through autotm-core's own entry points)."""
