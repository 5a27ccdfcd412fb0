"""`fast` reads an article's own bulleted lists (fast@7), not its lists of links or buttons."""

from resiliparse.parse.html import HTMLTree

from streamdedup.clean.fast_extract import content_lists, extract_fast, is_content_list

ARTICLE = [f"Paragraph {i} of the recipe says how long the dough rests and why the oven must be hot "
           f"before the tray goes in, with the baker's own notes on timing number {i}." for i in range(6)]
INGREDIENTS = ["500 g flour, sifted twice", "two teaspoons of dry yeast", "a pinch of sea salt"]
NESTED = "one egg yolk for the glaze"
LINKS = ["Another recipe for rye bread with seeds", "A third recipe for a lemon cake"]
BUTTONS = ["Print", "Email", "Save"]


def page(lists: str) -> str:
    first, rest = "".join(f"<p>{p}</p>" for p in ARTICLE[:3]), "".join(f"<p>{p}</p>" for p in ARTICLE[3:])
    menu = '<nav><ul><li><a href="/">Home</a></li><li><a href="/bread">Bread recipes</a></li></ul></nav>'
    return f'<html><body>{menu}<article class="post"><h1>Bread</h1>{first}{lists}{rest}</article></body></html>'


def ingredients() -> str:
    items = "".join(f"<li>{item}</li>" for item in INGREDIENTS[:-1])
    return f"<ul>{items}<li>{INGREDIENTS[-1]}<ul><li>{NESTED}</li></ul></li></ul>"


def test_an_articles_bulleted_list_is_read_in_its_place():
    text = extract_fast(page(ingredients()))
    assert all(item in text for item in [*INGREDIENTS, NESTED])
    assert text.index(ARTICLE[2]) < text.index(INGREDIENTS[0]) < text.index(ARTICLE[3])


def test_a_list_of_links_or_buttons_in_the_article_stays_out():
    links = "".join(f'<li><a href="/r{i}">{title}</a></li>' for i, title in enumerate(LINKS))
    buttons = "".join(f"<li><button>{word}</button></li>" for word in BUTTONS)
    text = extract_fast(page(f"<ul>{links}</ul><ul>{buttons}</ul>{ingredients()}"))
    assert all(item in text for item in INGREDIENTS) and all(p in text for p in ARTICLE)
    assert not any(title in text for title in LINKS) and not any(word in text for word in BUTTONS)
    assert "Bread recipes" not in text  # the menu outside the article


def test_a_list_in_a_share_bar_stays_out_though_it_reads_as_text():
    shared = "".join(f"<li>{item}</li>" for item in INGREDIENTS)
    for lists in (f'<div class="share-tools"><ul>{shared}</ul></div>', f'<ul class="social-links">{shared}</ul>'):
        text = extract_fast(page(lists))  # a skipped ancestor, or the list's own class (kept on its <ol>)
        assert not any(item in text for item in INGREDIENTS) and all(p in text for p in ARTICLE), lists


def test_what_counts_as_a_content_list():
    def first_list(html: str) -> bool:
        return is_content_list(HTMLTree.parse(html).body.query_selector("ul"))

    assert first_list("<ul><li>flour and water, mixed</li><li>salt</li></ul>")
    assert first_list("<ul><li>See <a href='/a'>the recipe</a> for the dough and its resting time</li></ul>")
    assert not first_list("<ul><li><a href='/a'>Bread recipes for beginners</a></li><li>new</li></ul>")
    assert not first_list("<ul><li>Print</li><li>Email</li></ul>")  # a word an item
    assert not first_list("<ul><li> </li></ul>")
    assert first_list("<ul><li>小麦粉を二回ふるう</li></ul>")  # a script without spaces: characters count


def test_content_lists_leaves_other_lists_as_they_are():
    tree = HTMLTree.parse(f"<ul><li><a href='/a'>{LINKS[0]}</a></li></ul>{ingredients()}")
    assert content_lists(tree) == 2  # the ingredients and the list nested in them
    assert [node.tag for node in tree.body.query_selector_all("ul, ol").values()] == ["ul", "ol", "ol"]


def test_a_listing_of_teasers_stays_out_though_each_holds_more_text_than_link():
    """Each item a linked title, then a teaser of the page it links to (a thumbnail's link first)."""
    teasers = "".join(f'<li><a href="/s{i}"><img src="/t{i}.jpg"></a><h3><a href="/s{i}">{title}</a></h3>'
                      f"<p>{ARTICLE[i][:90]} and what came of it in the end.</p></li>" for i, title in enumerate(LINKS))
    text = extract_fast(page(f"<ul>{teasers}</ul>{ingredients()}"))
    assert not any(title in text for title in LINKS) and all(item in text for item in INGREDIENTS)


def test_lists_nested_past_four_levels_are_not_copied_once_a_level_and_still_read():
    """Each list made an `<ol>` copies its markup: a page of lists nested 240 deep copied it 240 times
    (a crafted 350 kB page: 2.3 s of CPU against resiliparse's 10 ms). Only lists inside at most 3
    others are made `<ol>`s; resiliparse reads the deeper ones inside the `<ol>` above them."""
    from streamdedup.clean.fast_extract import MAX_LIST_NESTING

    tower = ""
    for level in reversed(range(12)):
        tower = f"<ul><li>the words of a list item at level {level} {tower}</li></ul>"
    tree = HTMLTree.parse(f"<html><body><article>{tower}</article></body></html>")
    assert content_lists(tree) == MAX_LIST_NESTING + 1 == 4
    lines = [line.strip() for line in extract_fast(page(tower)).split("\n")]
    assert all(f"the words of a list item at level {level}" in lines for level in range(12))


def test_a_list_written_in_capitals_is_read_as_one_in_lower_case():
    """The container's inside is tested for "<ul" before its lists are looked for: lexbor writes every tag in lower case."""
    items = "".join(f"<LI>{item}</LI>" for item in INGREDIENTS)
    text = extract_fast(page(f'<UL CLASS="steps">{items}</UL>'))
    assert all(item in text for item in INGREDIENTS)
