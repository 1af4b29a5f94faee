"""HTTP helpers: URLs and messages without secrets, and the server's `Retry-After`."""
from __future__ import annotations

import email.utils
from datetime import datetime, timedelta, timezone

from tasks.common.http import redact, retry_after_seconds, safe_url


def test_safe_url_drops_user_info_query_and_fragment():
    assert safe_url("https://user:pw@api.example.com:8443/v1?api-key=zzz#f") == "https://api.example.com:8443/v1"


def test_redact_replaces_every_secret_given():
    assert redact("key sk-1 and tok-2, again sk-1", "sk-1", None, "", "tok-2") == "key *** and ***, again ***"
    assert redact("nothing to hide") == "nothing to hide"


def test_retry_after_forms():
    assert retry_after_seconds("2.5") == 2.5 and retry_after_seconds("-1") == 0.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    later = email.utils.format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 20 <= retry_after_seconds(later) <= 31
