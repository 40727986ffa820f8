"""Sub-commands of the `lc0-rocm` CLI: one module each, with `configure(parser)` and `run(args) -> int`."""
