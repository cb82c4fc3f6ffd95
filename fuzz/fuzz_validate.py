"""Fuzz target: `fatpte.validate_buffer` over any bytes, and the report rendered as text and JSON.
validate never raises for a bad container (it reports), so any exception at all is a bug."""

from __future__ import annotations

import json

import _harness


def test_one_input(data: bytes) -> None:
    from fatpte.container.validation import validate_buffer

    report = validate_buffer(data)
    for f in report.findings:
        f.describe()
    json.dumps(report.to_json())
    if report.ok and report.version == 2:
        # A container validate accepts must open: open checks a subset of validate's rules.
        from fatpte.container.reader import Container

        with Container.from_buffer(data):
            pass


if __name__ == "__main__":
    _harness.fuzz(test_one_input)
