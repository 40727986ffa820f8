"""Benchmarking a backend the way `lc0 backendbench` does: measuring loop, statistics, Clippy, reports."""
