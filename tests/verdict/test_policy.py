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


@pytest.mark.parametrize("text", ["exact||minhash", "exact+", "|exact", "exact|minhash|", "+a12|exact"])
def test_a_sign_with_no_method_beside_it_is_refused(text):
    """'exact||minhash' ran as 'exact|minhash', 'exact+' as 'exact': a slip taken for a policy."""
    with pytest.raises(ValueError, match=r"a '\|' or '\+' with no method on one side"):
        Policy.parse(text)


def test_a_term_can_name_another_measure_of_a_methods_signatures():
    policy = Policy.parse("exact|minhash>=0.8|minhash.containment>=0.95")
    assert policy.rules[2] == (("minhash.containment", 0.95),)
    assert str(policy) == "exact|minhash>=0.8|minhash.containment>=0.95"
    assert policy.methods == {"exact", "minhash"}
    assert policy.measures == {("minhash", "containment")}
    site = SitePolicy(policy, policy)
    assert site.judge({"minhash": 0.5, "minhash.containment": 0.97}, same_site=True) == ("minhash.containment", 0.97)
    assert site.judge({"minhash": 0.5, "minhash.containment": 0.9}, same_site=True) is None
    with pytest.raises(ValueError, match=r"names a measure without a minimum: write minhash.containment>=NUMBER"):
        Policy.parse("exact|minhash.containment")  # no threshold of its own: every pair would pass


def test_a_measure_the_method_does_not_offer_is_refused_with_the_ones_it_has():
    from streamdedup.config import DetectorConfig

    with pytest.raises(ValueError, match=r"minhash has no measure 'contained' \(it has: containment\)"):
        DetectorConfig(same_site_policy="exact|minhash.contained>=0.9")
    with pytest.raises(ValueError, match=r"simhash has no measure 'containment' \(it has: none\)"):
        DetectorConfig(policy="exact|simhash.containment>=0.9")


def test_conjunction_needs_all_methods_on_the_same_page():
    policy = SitePolicy.parse("exact|simhash+a12", "exact")
    assert policy.judge({"simhash": 0.95}, same_site=False) is None
    assert policy.judge({"a12": 0.9}, same_site=False) is None
    assert policy.judge({"a12": 0.9, "simhash": 0.97}, same_site=False) == ("simhash+a12", 0.97)


def test_the_first_rule_that_holds_names_the_match():
    policy = SitePolicy.parse("exact|minhash", "exact")
    assert policy.judge({"exact": 1.0, "minhash": 1.0}, same_site=False) == ("exact", 1.0)
    assert policy.judge({"minhash": 0.6}, same_site=False) == ("minhash", 0.6)
    assert policy.judge({"a12": 1.0}, same_site=False) is None


def test_same_site_candidates_meet_the_stricter_policy():
    policy = SitePolicy.parse("exact|minhash", "exact|minhash>=0.8")
    assert policy.judge({"minhash": 0.7}, same_site=False) == ("minhash", 0.7)
    assert policy.judge({"minhash": 0.7}, same_site=True) is None
    assert policy.judge({"minhash": 0.85}, same_site=True) == ("minhash", 0.85)


@pytest.mark.parametrize("term", ["minhash>=2", "simhash>=-0.1", "minhash.containment>=95"])
def test_a_minimum_no_similarity_can_reach_is_refused_naming_the_range(term):
    """Every method's similarity is in [0, 1]: "minhash>=2" (a percentage's slip) was taken and the
    rule never held, silently."""
    with pytest.raises(ValueError, match="between 0 and 1"):
        Policy.parse(f"exact|{term}")


def test_a_configuration_of_no_method_is_refused():
    from streamdedup.config import DetectorConfig

    with pytest.raises(ValueError, match="methods names no method"):
        DetectorConfig(methods=())
