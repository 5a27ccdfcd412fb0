"""Lines a page's server printed as errors: PHP's warnings and notices, which are never its text.

A PHP site with its error display on prints each warning into the page, before or inside its
markup: `Warning: Undefined variable $x in /var/www/site/index.php on line 12` (PHP's own format,
`display_errors` in HTML or as text: a level, a message, the script's path and line). Main-content
extraction keeps them where they stand in the body, and a copy of an article on such a host then
reads 10-20 lines of warnings as text its article lacks (web dev: two copies of two articles on
one host kept as new text). They are dropped from the normalised text, by PHP's format alone:
a level PHP prints, then `in <path>.php on line <n>` closing the line.
"""

from __future__ import annotations

import re

# PHP's error levels as `display_errors` prints them (php-src main/main.c, `php_error_cb`), folded
_LEVELS = ("warning", "notice", "deprecated", "strict standards", "fatal error", "parse error",
           "recoverable fatal error", "catchable fatal error", "core warning", "compile warning",
           "user warning", "user notice", "user deprecated", "user error")
_ERROR_LINE = re.compile(r"(?:php )?(?:" + "|".join(re.escape(level) for level in _LEVELS) + r")\s*:.*"
                         r" in \S+\.(?:php\d?|phtml|inc)(?:\(\d+\)(?: : eval\(\)'d code)?)? on line \d+\s*")


def without_server_errors(text: str) -> str:
    """The normalised (folded) text without the lines that are PHP's error messages.

    One substring scan a page when it has none (nearly every page)."""
    if " on line " not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not _ERROR_LINE.fullmatch(line))
