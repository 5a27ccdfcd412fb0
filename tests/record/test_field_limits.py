"""Fields copied into every output of a page are bounded (issue 11: a 300 KB id stalled the worker)."""

from __future__ import annotations

import pytest

from streamdedup.record.page import MAX_ID_CHARS, MAX_URL_CHARS, page_from_record
from streamdedup.record.rejection import Reason, Rejected


def test_an_id_at_the_limit_is_kept_one_over_is_rejected_naming_the_limit():
    base = {"url": "https://a.example/", "content": "<p>text</p>"}
    assert page_from_record({**base, "id": "i" * MAX_ID_CHARS}, max_content_bytes=1000).id == "i" * MAX_ID_CHARS
    with pytest.raises(Rejected) as refused:
        page_from_record({**base, "id": "i" * (MAX_ID_CHARS + 1)}, max_content_bytes=1000)
    assert refused.value.reason is Reason.INVALID_FIELD and str(MAX_ID_CHARS) in refused.value.detail


def test_a_url_over_the_limit_is_rejected():
    url = "https://a.example/" + "p" * MAX_URL_CHARS
    with pytest.raises(Rejected) as refused:
        page_from_record({"url": url, "content": "<p>text</p>"}, max_content_bytes=1000)
    assert refused.value.reason is Reason.INVALID_FIELD and str(MAX_URL_CHARS) in refused.value.detail
