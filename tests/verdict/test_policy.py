import pytest

from streamdedup.verdict.policy import Policy


def test_parse_and_print():
    policy = Policy.parse(" exact | minhash | simhash + a12 ")
    assert policy.rules == (("exact",), ("minhash",), ("simhash", "a12"))
    assert str(policy) == "exact|minhash|simhash+a12"
    assert policy.methods == {"exact", "minhash", "simhash", "a12"}
    with pytest.raises(ValueError, match="empty policy"):
        Policy.parse(" | ")


def test_conjunction_needs_all_methods_on_the_same_page():
    policy = Policy.parse("exact|simhash+a12")
    assert policy.decide({3: {"simhash": 0.95}, 5: {"a12": 0.9}}) is None
    decision = policy.decide({3: {"simhash": 0.95}, 5: {"a12": 0.9, "simhash": 0.97}})
    assert (decision.seq, decision.rule, decision.similarity) == (5, "simhash+a12", 0.97)


def test_earliest_matching_page_wins():
    policy = Policy.parse("exact|minhash")
    decision = policy.decide({9: {"exact": 1.0}, 4: {"minhash": 0.6}})
    assert decision.seq == 4 and decision.rule == "minhash"
    assert policy.matching_seqs({9: {"exact": 1.0}, 4: {"minhash": 0.6}, 2: {"a12": 1.0}}) == [4, 9]
