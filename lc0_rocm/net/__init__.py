"""Lc0 network files: protobuf schema, loader into an immutable description, writer and generator."""
