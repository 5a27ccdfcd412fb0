"""The input message's Kafka headers and key as the outputs pass them on: whole up to a bound, else left out.

A Kafka record may carry megabytes of binary headers or key (up to the pages topic's limit), and
the verdict line, the cluster events and the global topology's page header carry them on in a
larger form (headers decoded as text: a bad byte is 3 bytes of U+FFFD, a control byte 6 of
`\\u00XX`; base64 in the page header): such an output could grow past its topic's limit although
the input fit its own, and the broker would refuse the transaction on every attempt. So these
outputs carry the input's headers (all of them, `PASSED_BYTES` in all) and its key (`PASSED_BYTES`)
only up to the bound; above it they leave them out whole and say how many bytes they left out
(`headers_omitted`, `key_omitted`). A main output (verdict, dead letter) passes them on whole
where it fits its topic with them (`outputs.kafka`).
"""

from __future__ import annotations

from collections.abc import Sequence

Headers = Sequence[tuple[str, bytes | None]]

# what a light output carries of the input's headers (in all) and of its key: a crawler's trace or
# tenant ids are far smaller, and it keeps a verdict line within a 1 MB topic even decoded as text
PASSED_BYTES = 64 * 1024


def headers_bytes(headers: Headers | None) -> int:
    """The size of the headers: their names' and values' bytes."""
    return sum(len(name.encode("utf-8", "surrogatepass")) + len(value or b"") for name, value in headers or ())


def bounded_headers(headers: Headers | None, omitted: int = 0,
                    bound: int = PASSED_BYTES) -> tuple[list[tuple[str, bytes | None]], int]:
    """The headers to pass on and the bytes of those left out.

    All of them if they hold at most `bound` bytes in all (and `omitted`, what an earlier step left
    out already); else none, and their size."""
    size = headers_bytes(headers)
    if size <= bound:
        return list(headers or ()), omitted
    return [], omitted + size


def bounded_key(key: bytes | None, omitted: int = 0) -> tuple[bytes | None, int]:
    """The key to pass on (None: none, or left out) and the bytes left out (`omitted`: by an earlier step)."""
    if key is None or len(key) <= PASSED_BYTES:
        return key, omitted
    return None, omitted + len(key)
