"""`fast`'s selector lists written for lexbor's speed match what they matched written plainly."""

import random

from resiliparse.parse.html import HTMLTree

from streamdedup.clean import fast_extract as fe

# tags and attributes the skip list and the container tests look at, and others
_TAGS = ("div", "section", "article", "p", "a", "span", "form", "aside", "nav", "footer", "ul", "li", "h2", "input",
         "figure", "main")
_CLASSES = ("share-buttons", "post-comments", "content", "ad", "Article-Body", "widget elementor-x", "commentary",
            "comment-list", "date", "hidden", "cookie-bar", "sidebar-left", "story", "tags", "btn", "entry")
_IDS = ("comments", "respond", "nav-main", "ad-top", "main", "share", "Footer", "story", "x1")
_OTHER = ('role="navigation"', 'role="main"', 'style="display:none"', 'aria-hidden="true"', "hidden",
          'type="password"', 'data-streamdedup-card=""', 'itemprop="articleBody"')


def _pages(seed: int, count: int) -> list[HTMLTree]:
    rng = random.Random(seed)

    def element(depth: int) -> str:
        tag = rng.choice(_TAGS)
        attributes = []
        if rng.random() < 0.5:
            attributes.append(f'class="{rng.choice(_CLASSES)}"')
        if rng.random() < 0.3:
            attributes.append(f'id="{rng.choice(_IDS)}"')
        if rng.random() < 0.2:
            attributes.append(rng.choice(_OTHER))
        inside = "".join(element(depth + 1) if depth < 5 and rng.random() < 0.55 else f"words {rng.randrange(99)} "
                         for _ in range(rng.randint(1, 3)))
        return f"<{tag} {' '.join(attributes)}>{inside}</{tag}>"

    return [HTMLTree.parse(f"<html><body>{''.join(element(0) for _ in range(4))}</body></html>") for _ in range(count)]


def test_a_grouped_list_matches_what_its_selectors_match():
    selectors = [*(fe._selector(*token) for token in fe._DISCARD_TOKENS), *fe.HOST_LINES, fe.TEASER_CARDS, fe.CARDS,
                 fe.NOSCRIPT_ELEMENT,
                 # selectors of more than one element: grouped, `[class]:is(...)` would test the wrong one
                 '[class*="content" i] p', '[id="main"] > span', '[class~="date"] + a', '[class="ad"] ~ li']
    grouped = fe.grouped_by_attribute(selectors)
    assert grouped.startswith("[id]:is(") and "[class]:is(" in grouped  # it groups
    plain = ", ".join(selectors)
    matched = 0
    for tree in _pages(89, 300):
        found = tree.body.query_selector_all(plain).values()
        assert tree.body.query_selector_all(grouped).values() == found
        matched += len(found)
    assert matched > 1000


def test_the_skip_list_is_the_plain_list_grouped():
    plain = ", ".join([*(fe._selector(*token) for token in fe._DISCARD_TOKENS), *fe.HOST_LINES, fe.TEASER_CARDS,
                       fe.CARDS, fe.NOSCRIPT_ELEMENT])
    for tree in _pages(60, 100):
        assert fe.main_content_text(tree, fe.DISCARD_SELECTORS) == fe.main_content_text(tree, [plain])


def test_one_compound_is_one_element_s_tests():
    assert fe._one_compound('[class*="a, b > c" i]')
    assert fe._one_compound(':is(div, section)[class*="comment" i]:not([class*="commentary" i])')
    assert not fe._one_compound("div p")
    assert not fe._one_compound("[id] > p")
    assert not fe._one_compound("a, b")


def test_outside_cleaned_is_not_inside_each_cleaned_element_nor_a_comment_section():
    """`_OUTSIDE_CLEANED` as one `:is` list: what a descendant test per selector found (`:not(s *, ...)`)."""
    def not_inside(selectors: list[str], itself: bool) -> str:
        return ":not(" + ", ".join(([*selectors] if itself else []) + [f"{s} *" for s in selectors]) + ")"

    plain = (not_inside(fe._CLEANED_FIRST.split(", "), itself=False)
             + not_inside(fe._COMMENT_SECTIONS.split(", "), itself=True))
    tested = kept = 0
    for tree in _pages(61, 200):
        for node in tree.body.query_selector_all("div, section, article, main").values():
            tested += 1
            kept += node.matches(fe._OUTSIDE_CLEANED)
            assert node.matches(fe._OUTSIDE_CLEANED) == node.matches(plain)
    assert 0 < kept < tested
