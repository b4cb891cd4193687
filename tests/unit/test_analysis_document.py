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


def test_html_contents_list_every_section_once_after_the_answer_and_link_to_it():
    doc = [Heading("Capacity report", 1), Heading("The answer"), Para("Plan on 3 req/s."),
           Heading("The answer in detail"), Para("x"), Heading("Tiers"), Heading("Per tier", 3), Heading("Tiers")]
    page = to_html(doc, "t")
    nav = page[page.index("<nav class='toc'"):page.index("</nav>")]
    # the answer first, the contents under it, before the second section
    assert page.index("Plan on 3 req/s.") < page.index("<nav") < page.index("<h2 id='the-answer-in-detail'>")
    assert nav.count("<li>") == 4  # level-2 sections only; a repeated heading gets its own anchor
    assert "href='#the-answer-in-detail'" in nav and "href='#tiers'" in nav and "href='#tiers-1'" in nav
    assert "Per tier" not in nav
    assert "<nav" not in to_html([Heading("Only", 1), Heading("One section")], "t")  # one section needs no list
