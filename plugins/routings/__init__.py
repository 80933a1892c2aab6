"""Built-in routings: one module per routing (tables, per-packet draws, compiled per-hop
programs), each registered through the ``federation`` entry-point group."""
