"""Gold content units: a paragraph that repeats another of its article is held wherever that one is."""

from conftest import make_article, wrap_in_template

from streamdedup.evaluate.directional import SAFE, edge_kind
from streamdedup.evaluate.pages import SourcePage
from streamdedup.evaluate.sets import article_units, repeats


def _page(paragraphs):
    return SourcePage("traf:story.html", wrap_in_template(paragraphs, "Host", "A story"), tuple(paragraphs),
                      "A story", "en")


def test_a_copy_adding_only_a_repeated_standfirst_or_pull_quote_loses_nothing():
    """A story page shows its standfirst twice, and a pull quote of a sentence of its body with
    the figures lost ("for every 00 invested"; story dev's two content-loss edges of 0.21.x):
    a fetch lacking the repeat holds its text, so its copy without it is safe, not content loss."""
    body = make_article(7, paragraphs=4)
    standfirst = body[0]
    sentence = "The old rule of thumb is that for every $1000 invested in a room, the hotel should charge $1 a night."
    quote = "The old rule of thumb is that for every 00 invested in a room, the hotel should charge"
    paragraphs = [standfirst, body[1], quote, f"{body[2]} {sentence} {body[3]}", standfirst]
    page = _page(paragraphs)
    without_repeat = article_units(page, [0, 1, 2, 3])  # the standfirst shown once
    with_repeat = article_units(page, [0, 1, 2, 3, 4])
    assert edge_kind(frozenset(with_repeat), frozenset(without_repeat)) == SAFE
    without_quote = article_units(page, [0, 1, 3, 4])
    assert edge_kind(frozenset(article_units(page)), frozenset(without_quote)) == SAFE
    # a paragraph of its own is still a unit of its own: a copy lacking it is content loss
    assert edge_kind(frozenset(article_units(page)), frozenset(article_units(page, [0, 2, 3, 4]))) != SAFE


def test_a_paragraph_repeats_another_only_as_a_run_of_its_words():
    quote = "Hotels are getting away from comforters, but blankets are here to stay, he said"
    assert repeats(quote, f"Forrest Jones agreed. {quote}. Some hotels are still hesitant.")
    # figures standing alone are not compared: a pull quote may have lost them
    assert repeats("Prices of the flats in the old town rose 5 % in May and again in June",
                   "They said prices of the flats in the old town rose 7 % in May and again in June.")
    assert not repeats("Comforters are getting away from hotels, but blankets are here to stay, he said", quote)
    assert not repeats("1,000", "It cost 1,000 euros")  # no word of letters: nothing said
    # a figure inside a word is the word's: "multiboot" is not "multiboot2" (a manual's two options)
    line = "Check whether the given FILE can be used as an x86 multiboot kernel"
    assert not repeats(line, "--is-x86-multiboot2 Check whether the given FILE can be used as an x86 multiboot2 kernel")
    assert repeats(line, f"--is-x86-multiboot {line}")


def test_a_short_line_repeats_only_the_same_line():
    """A heading a paragraph mentions ("Avanti West Coast") is still a line of its own; shown twice, it is one."""
    assert not repeats("Avanti West Coast", "For journeys of over an hour Avanti West Coast will aim to provide a toilet.")
    assert repeats("Dritter Vorteil: Dekantieren hilft oft bei defekten Korken",
                   "Dritter Vorteil – Dekantieren hilft oft bei defekten Korken!")
