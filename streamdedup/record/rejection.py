"""Why an input record was refused.

The reason code is machine-readable; it becomes a metric label and the `dedup.reason` of the record
in the rejected output."""

from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    """Why a record was rejected: its code in `dedup.reason` and in metric labels."""

    INVALID_JSON = "invalid_json"
    INVALID_SHAPE = "invalid_shape"
    MISSING_URL = "missing_url"
    MISSING_CONTENT = "missing_content"
    INVALID_FIELD = "invalid_field"
    EMPTY_CONTENT = "empty_content"
    TOO_LARGE = "too_large"
    UNDECODABLE = "undecodable"
    NO_TEXT = "no_text"
    TEMPLATE_ONLY = "template_only"  # what is left after removing the site's template is too short to judge
    PROCESSING_ERROR = "processing_error"
    TIMEOUT = "timeout"
    DUPLICATE_ID = "duplicate_id"
    UNSUPPORTED_CONTENT_TYPE = "unsupported_content_type"
    TRUNCATED_INPUT = "truncated_input"  # the input file ends inside a record (a cut .gz or WARC)
    UNREADABLE_RECORD = "unreadable_record"  # bytes of the input that are no record (a broken WARC record)
    # no longer given (deep markup is flattened, `clean.nesting`); kept for old outputs and their readers
    TOO_DEEP = "too_deep"
    TOO_LARGE_FOR_BROKER = "too_large_for_broker"  # an output the Kafka broker refused for its size
    HTTP_STATUS = "http_status"  # a WARC response whose HTTP status is not 2xx (an error page, a redirect)
    WARC_REVISIT = "warc_revisit"  # a WARC revisit record: the crawler's own duplicate of a capture, no payload


class Rejected(Exception):
    """Raised by any stage that refuses a record; carries the reason and a human detail."""

    def __init__(self, reason: Reason, detail: str) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
