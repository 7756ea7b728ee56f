"""The restricted-API test (``--http-restricted-api``), shared by the dispatch and
the dashboard views that show part of their data to some callers only."""

from __future__ import annotations

#: (lower-case header name, the value it must have)
Rule = tuple[str, str]


def permits(rule: Rule | None, headers: dict[str, str]) -> bool:
    """Whether a request with ``headers`` (lower-case names) passes ``rule`` (None: open)."""
    return rule is None or headers.get(rule[0]) == rule[1]


def refusal_message(rule: Rule) -> str:
    """Triton's 403 text, which names the header but never its value."""
    return f"This API is restricted, expecting header '{rule[0]}'"
