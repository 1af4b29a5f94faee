"""HTTP helpers shared by every client (the OpenAI-compatible client, the MinerU cloud API): URLs
and messages with secrets removed, and the server's `Retry-After`."""
from __future__ import annotations

import email.utils
from datetime import datetime, timezone
from urllib.parse import urlsplit, urlunsplit


def safe_url(url: str) -> str:
    """`url` without user info, query or fragment: what may appear in a message."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def redact(text: str, *secrets: str | None) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def retry_after_seconds(value: str | None) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
