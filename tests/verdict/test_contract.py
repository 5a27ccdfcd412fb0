"""The output contract: one JSON form and one header form, the same in the worker and the Faust app."""

import orjson

from streamdedup.runtime.faust_app import render
from streamdedup.verdict.contract import Rejection, Verdict, headers


def test_a_duplicate_carries_its_cluster_original_method_and_similarity_in_headers():
    dedup = Verdict("p2", "duplicate", "p1", "p1", 0.91234, "minhash").as_dict()
    assert dedup == {"id": "p2", "status": "duplicate", "duplicate_of": "p1", "similarity": 0.9123,
                     "method": "minhash", "cluster_id": "p1"}
    assert dict(headers(dedup, "pages[0]@7")) == {
        "dedup.status": b"duplicate", "dedup.cluster_id": b"p1", "dedup.duplicate_of": b"p1",
        "dedup.method": b"minhash", "dedup.similarity": b"0.9123", "dedup.source": b"pages[0]@7"}


def test_a_rejection_carries_reason_detail_and_source():
    dedup = Rejection("invalid_json", "not JSON: x" * 500, "pages[1]@3").as_dict()
    got = dict(headers(dedup, "pages[1]@3"))
    assert got["dedup.status"] == b"rejected" and got["dedup.reason"] == b"invalid_json"
    assert len(got["dedup.detail"]) == 1000 and got["dedup.source"] == b"pages[1]@3"


def test_the_faust_app_renders_the_workers_headers():
    """Before: the Faust path dropped dedup.duplicate_of, dedup.method, dedup.detail and dedup.source."""
    duplicate = Verdict("p2", "duplicate", "p1", "p1", 0.9, "exact").as_dict()
    (_, _, _, got), *events = render(duplicate, b"k", b'{"url": "https://a.example/"}', "pages[0]@7")
    assert got == headers(duplicate, "pages[0]@7") and events
    rejected = Rejection("invalid_json", "not JSON", "pages[0]@8").as_dict()
    (_, _, value, got), *rest = render(rejected, b"k", b"{bad", "pages[0]@8")
    assert value == b"{bad" and got == headers(rejected, "pages[0]@8")
    assert len(rest) == 1  # and its verdict line (pages.verdicts); a rejection has no cluster event


def test_the_faust_apps_dead_letter_carries_its_verdict_as_the_workers_does():
    """Before: the Faust app sent a rejected JSON object as it came, without its `dedup`."""
    rejected = Rejection("no_text", "no main text", "pages[0]@9").as_dict()
    (_, _, value, _), _ = render(rejected, b"k", b'{"url": "https://a.example/", "content": ""}', "pages[0]@9")
    assert orjson.loads(value) == {"url": "https://a.example/", "content": "", "dedup": rejected}


def test_the_faust_apps_dead_letter_carries_its_verdict_in_place_of_the_senders():
    """Before: a rejected object with its own `dedup` kept it (a sender's "duplicate" passed for ours)."""
    rejected = Rejection("missing_content", "no content field", "pages[0]@9").as_dict()
    forged = b'{"url": "https://a.example/", "dedup": {"status": "duplicate", "duplicate_of": "victim"}}'
    (_, _, value, _), _ = render(rejected, b"k", forged, "pages[0]@9")
    assert orjson.loads(value) == {"url": "https://a.example/", "dedup": rejected}


def test_the_faust_apps_page_outputs_carry_the_inputs_headers_as_the_workers_do():
    """A crawler's trace id on every output of its page, after ours; an input `dedup.*` header is dropped.

    Before: the Faust app put the input's headers on the verdict line only, not on the page's
    verdict, its dead letter or its `too_large_for_broker` stub (the worker carries them on each)."""
    from streamdedup.runtime.faust_outputs import is_stub, too_large_output

    passed = [("trace-id", b"t-1"), ("dedup.status", b"forged"), ("tenant", b"\x00\xff"), ("empty", None)]
    carried = [("trace-id", b"t-1"), ("tenant", b"\x00\xff"), ("empty", None)]
    unique = Verdict("p1", "unique", "p1").as_dict()
    [page, *_] = render(unique, b"k", b'{"url": "https://a.example/"}', "pages[0]@7", passed)
    assert page[0] == "unique" and page[3] == [*headers(unique, "pages[0]@7"), *carried]
    rejected = Rejection("invalid_json", "not JSON", "pages[0]@8").as_dict()
    [dead, _] = render(rejected, b"k", b"{bad", "pages[0]@8", passed)
    assert dead[0] == "rejected" and dead[3] == [*headers(rejected, "pages[0]@8"), *carried]
    stub = too_large_output(page, "unique-topic", "pages[0]@7")
    assert stub[0] == "rejected" and dict(stub[3])["dedup.reason"] == b"too_large_for_broker"
    assert stub[3][-3:] == carried and dict(stub[3])["dedup.status"] == b"rejected"
    dead_stub = too_large_output(dead, "rejected-topic", "pages[0]@8")
    assert dead_stub[3][-3:] == carried and dict(dead_stub[3])["dedup.original_bytes"] == b"4"
    # a stub is told by our headers, not by an input's header that says the same
    assert is_stub(stub[3]) and is_stub(dead_stub[3])
    assert not is_stub([*headers(unique, "pages[0]@7"), ("note", b"too_large_for_broker"), ("reason", b"x")])
