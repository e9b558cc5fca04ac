"""HTML to readable text with the standard library's parser (no heavy dependencies).

Scripts, styles and other non-content elements are dropped; block elements
become line breaks, list items get a "- "; runs of whitespace become one space
except in <pre>, which keeps its line breaks (not its indentation). Malformed
HTML degrades to "some text", never to an exception.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

SPACES = re.compile(r"\s+")
SKIPPED = {"script", "style", "noscript", "template", "svg", "canvas", "iframe", "object", "head", "select"}
BLOCKS = {
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset", "figcaption", "figure",
    "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
    "section", "table", "tbody", "td", "th", "thead", "tr", "ul", "caption", "details", "summary",
}  # fmt: skip


class TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.skip_depth = 0  # inside <script>, <style>, ...: their text is not content
        self.pre_depth = 0
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self.in_title = True
        elif tag in SKIPPED:
            self.skip_depth += 1
        elif tag == "pre":
            self.pre_depth += 1
        if tag in BLOCKS:
            self.parts.append("\n- " if tag == "li" else "\n")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        if tag in BLOCKS:  # <br/>, <hr/>: a break, and no depth to count
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif tag in SKIPPED:
            self.skip_depth = max(0, self.skip_depth - 1)
        elif tag == "pre":
            self.pre_depth = max(0, self.pre_depth - 1)
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title_parts.append(data)
        elif not self.skip_depth:
            self.parts.append(data if self.pre_depth else SPACES.sub(" ", data))


def tidy(text: str) -> str:
    """Strip each line; keep at most one empty line in a row, none inside a list."""
    lines, blank = [], False
    for line in text.split("\n"):
        line = line.strip() if not line.startswith("- ") else "- " + line[2:].strip()
        if line in ("", "-"):
            blank = bool(lines)
            continue
        if blank and not (line.startswith("- ") and lines[-1].startswith("- ")):  # a list stays together
            lines.append("")
        blank = False
        lines.append(line)
    return "\n".join(lines)


def html_to_text(markup: str) -> tuple[str, str]:
    """(title, text) of an HTML document."""
    extractor = TextExtractor()
    try:
        extractor.feed(markup)
        extractor.close()
    except (AssertionError, ValueError):  # the parser's own errors on broken markup: keep what was read
        pass
    title = " ".join("".join(extractor.title_parts).split())
    return title, tidy("".join(extractor.parts))
