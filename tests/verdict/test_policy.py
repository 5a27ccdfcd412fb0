import pytest

from streamdedup.verdict.policy import Policy, SitePolicy


def test_parse_and_print():
    policy = Policy.parse(" exact | minhash>=0.8 | simhash + a12 ")
    assert policy.rules == ((("exact", 0.0),), (("minhash", 0.8),), (("simhash", 0.0), ("a12", 0.0)))
    assert str(policy) == "exact|minhash>=0.8|simhash+a12"
    assert policy.methods == {"exact", "minhash", "simhash", "a12"}
    with pytest.raises(ValueError, match="empty policy"):
        Policy.parse(" | ")
    with pytest.raises(ValueError, match="METHOD>=NUMBER"):
        Policy.parse("minhash>=high")


def test_conjunction_needs_all_methods_on_the_same_page():
    policy = SitePolicy.parse("exact|simhash+a12", "exact")
    assert policy.decide({3: {"simhash": 0.95}, 5: {"a12": 0.9}}) is None
    decision = policy.decide({3: {"simhash": 0.95}, 5: {"a12": 0.9, "simhash": 0.97}})
    assert (decision.seq, decision.rule, decision.similarity) == (5, "simhash+a12", 0.97)


def test_earliest_matching_page_wins():
    policy = SitePolicy.parse("exact|minhash", "exact")
    decision = policy.decide({9: {"exact": 1.0}, 4: {"minhash": 0.6}})
    assert decision.seq == 4 and decision.rule == "minhash"
    assert policy.matching_seqs({9: {"exact": 1.0}, 4: {"minhash": 0.6}, 2: {"a12": 1.0}}) == [4, 9]


def test_same_site_candidates_meet_the_stricter_policy():
    policy = SitePolicy.parse("exact|minhash", "exact|minhash>=0.8")
    matches = {1: {"minhash": 0.7}, 2: {"minhash": 0.85}}
    assert policy.decide(matches, same_site={1: True, 2: True}).seq == 2
    assert policy.decide(matches, same_site={1: False, 2: True}).seq == 1
    assert policy.decide({1: {"minhash": 0.7}}, same_site={1: True}) is None
