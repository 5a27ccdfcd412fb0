"""`fast`'s `HOST_LINES`: a cold page's own lines that trafilatura leaves out, left out of the article's text."""

import pytest

from streamdedup.clean.fast_extract import extract_fast

ARTICLE = [f"Paragraph {i} of the story tells what the council decided about the harbour bridge and why "
           f"the vote took so long, with quotes from both sides of the debate number {i}." for i in range(6)]


def page(inside: str, after: str = "") -> str:
    """An article in trafilatura's first kind of container with `inside` after its paragraphs, `after` after it."""
    paragraphs = "".join(f"<p>{p}</p>" for p in ARTICLE)
    return (f'<html><body><div class="entry-content"><h1>The harbour bridge vote</h1>{paragraphs}{inside}</div>'
            f"{after}</body></html>")


# (what the host adds, a line of it that must not be read)
HOST: dict[str, tuple[str, str]] = {
    "comment cards": ('<div class="mo-comments-list"><div class="mo-comment-card"><strong>Muriel - Le 22/01/2020'
                      '</strong><div class="mo-comment-content">Pour sauver un fleuron du patrimoine</div></div></div>',
                      "Pour sauver un fleuron du patrimoine"),
    "a cookie notice": ('<div class="m159-cookies-policy"><p>Unsere Website verwendet Cookies für verschiedene '
                        "Zwecke, insbesondere zur Verbesserung ihrer Funktionsweise.</p></div>",
                        "Unsere Website verwendet Cookies"),
    "a button": ('<div class="mo-button-sign-another">Je signe avec un autre email</div>',
                 "Je signe avec un autre email"),
    "a date line": ('<div class="field field--name-node-post-date">20.12.2022</div>', "20.12.2022"),
    "a dialog": ('<div class="oxy-modal-backdrop"><div class="ct-modal"><h3>Melde dich zum Newsletter an</h3>'
                 "<div>Mehr als 800.000 Fans erhalten bereits Informationen</div></div></div>",
                 "Mehr als 800.000 Fans"),
    "a hidden block": ('<div class="block-cross d-none"><h2>Les pétitions soutenues par d\'autres utilisateurs</h2>'
                       "</div><div hidden>Vous avez déjà signé cette pétition</div>"
                       '<div class="hidden">Merci pour votre mobilisation</div>',
                       "soutenues par d'autres"),
}


@pytest.mark.parametrize("name", sorted(HOST))
def test_a_hosts_line_inside_the_container_is_left_out(name):
    markup, line = HOST[name]
    text = extract_fast(page(markup))
    assert all(p in text for p in ARTICLE), name
    assert line not in text, name


@pytest.mark.parametrize("name", sorted(HOST))
def test_a_hosts_line_on_a_page_without_a_container_is_left_out(name):
    markup, line = HOST[name]
    html = page("", markup).replace('class="entry-content"', 'class="txt"')
    text = extract_fast(html)
    assert all(p in text for p in ARTICLE), name
    assert line not in text, name


def test_every_hidden_marker_is_left_out():
    text = extract_fast(page(HOST["a hidden block"][0]))
    for line in ("soutenues par d'autres", "déjà signé", "Merci pour votre mobilisation"):
        assert line not in text


def test_a_commentary_and_a_half_shown_block_stay():
    """A commentary is an article; "hide-sm" hides a block on small screens only; "date" inside a word is no date line."""
    lines = ["A commentary on the bridge vote by the paper's own editor, in full sentences that matter.",
             "The timetable for the works is shown on wide screens only, but it is the article's text.",
             "The candidates announced at the meeting were then questioned by the members for an hour."]
    text = extract_fast(page(f'<div class="article-commentary"><p>{lines[0]}</p></div>'
                             f'<div class="hide-sm"><p>{lines[1]}</p></div>'
                             f'<div class="candidates"><p>{lines[2]}</p></div>'))
    assert all(line in text for line in lines)
