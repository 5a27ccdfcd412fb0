"""PHP's error lines are dropped from a page's text (`clean/server_errors.py`)."""

from __future__ import annotations

from streamdedup.clean.server_errors import without_server_errors
from streamdedup.testing import make_article, run_records, wrap_in_template

_WARNINGS = [
    "<b>Strict Standards</b>: Redefining already defined constructor for class wpdb in "
    "<b>/www/htdocs/w0094d70/wp-includes/wp-db.php</b> on line <b>56</b><br />",
    "<b>Deprecated</b>: Assigning the return value of new by reference is deprecated in "
    "<b>/www/htdocs/w0094d70/wp-includes/cache.php</b> on line <b>36</b><br />",
    "<b>Warning</b>: Undefined variable $sidebar_position in <b>/var/www/site/themes/news/single.php</b> "
    "on line <b>212</b><br />",
    "<b>Notice</b>: Trying to access array offset on value of type null in "
    "<b>/var/www/site/plugins/share/share.php</b> on line <b>88</b><br />",
]


def test_phps_error_lines_are_dropped_and_a_sentence_citing_one_is_kept():
    text = ("warning: undefined variable $x in /var/www/site/index.php on line 12\n"
            "the council met on tuesday.\n"
            "notice: undefined index: id in c:\\xampp\\htdocs\\shop\\cart.inc on line 7\n"
            "the log showed the error in /var/www/site/index.php on line 12 twice that night.\n"
            "fatal error: uncaught error: call to undefined function f() in /srv/app.php:3 stack trace\n"
            "in /srv/app.php on line 3")
    assert without_server_errors(text).split("\n") == [
        "the council met on tuesday.",
        "the log showed the error in /var/www/site/index.php on line 12 twice that night.",
        "fatal error: uncaught error: call to undefined function f() in /srv/app.php:3 stack trace",
        "in /srv/app.php on line 3"]
    assert without_server_errors("no error here.\nat all") == "no error here.\nat all"


def test_a_copy_on_a_host_printing_php_warnings_is_its_articles_duplicate(tmp_path):
    """A host with PHP's error display on prints its warnings into the article's container: a copy
    there read ~100 words of warnings its original lacks, as new text, and was kept."""
    story = make_article(41, paragraphs=5)
    copy_html = wrap_in_template(story, "b.example").replace("<article>", "<article>" + "".join(_WARNINGS * 3))
    pages = [{"id": "story", "url": "https://a.example/story", "fetched_at": "2026-01-01T00:00:00Z",
              "html": wrap_in_template(story, "a.example")},
             {"id": "copy", "url": "https://b.example/copy", "fetched_at": "2026-01-01T01:00:00Z", "html": copy_html}]
    got = {o.dedup["id"]: o.dedup for o in run_records(pages, tmp_path)}
    assert got["copy"]["status"] == "duplicate" and got["copy"]["duplicate_of"] == "story", got["copy"]
