"""The report document: every string escaped in HTML, figures embedded, markdown links."""

from __future__ import annotations

import base64

from llmload.analysis.report.document import Bullets, FigureBlock, Heading, Para, Table, to_html, to_markdown

EVIL = "<script>alert('x')</script>&"


def test_html_escapes_every_string_and_embeds_figures():
    png = b"\x89PNG fake"
    doc = [Heading(EVIL, 1), Para(EVIL, lead=EVIL), Bullets(((EVIL, EVIL),), callout="warn"),
           Table((EVIL,), ((EVIL,),), note=EVIL), FigureBlock(EVIL, EVIL, png)]
    page = to_html(doc, EVIL)
    assert "<script>" not in page
    assert page.count("&lt;script&gt;") == 11  # title, h1, lead+para, bullet lead+text, th, td, note, alt, caption
    assert base64.b64encode(png).decode() in page
    assert "src='http" not in page and 'src="http' not in page


def test_markdown_links_figures_and_escapes_table_pipes():
    md = to_markdown([Table(("a|b", "n"), (("x|y", "1"),)), FigureBlock("knee", "cap", b"")])
    assert "a\\|b" in md and "x\\|y" in md
    assert "![knee](plots/knee.png)" in md
