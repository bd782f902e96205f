"""Parsers: the bytes of a raw source turned into text segments with provenance."""
