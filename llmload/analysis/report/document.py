"""A tiny document model rendered twice: Markdown (report.md) and self-contained HTML.

How it works: the report is a list of blocks (heading, paragraph, bullet list, table,
figure, callout). `to_markdown` writes figures as links to PNG files next to the report;
`to_html` embeds them as base64 data URIs and passes every string through html.escape, so
nothing from a run folder (model names, error details, hosts) can inject markup. A bullet may
end with a link to a heading of the same document: its anchor is the heading's GitHub slug
(`slug`), which GitHub gives the heading in report.md and `to_html` gives it as its id.
"""

from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    text: str
    lead: str = ""
    """bold words before the text"""


@dataclass(frozen=True)
class Bullets:
    items: tuple[tuple[str, str], ...]
    """(bold lead, text) pairs"""
    callout: str = ""
    """'' for a plain list; 'answer' or 'warn' for a highlighted box"""
    links: tuple[tuple[str, str], ...] = ()
    """(label, heading text) per item, the item's closing link to that heading of the document; () for none"""


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""
    numeric_from: int = 1
    """columns from this index on are right-aligned"""


@dataclass(frozen=True)
class FigureBlock:
    name: str
    caption: str
    png: bytes = field(repr=False)


Block = Heading | Para | Bullets | Table | FigureBlock


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but `-` and `_` dropped, spaces to hyphens
    ('Latency (ms, successful requests)' -> 'latency-ms-successful-requests')."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def md_item(lead: str, text: str, link: tuple[str, str] | None = None) -> str:
    """One bullet of report.md: '- **lead** text ([label](#anchor))'."""
    tail = f" ([{link[0]}](#{slug(link[1])}))" if link else ""
    return (f"- **{lead}** {text}" if lead else f"- {text}") + tail


def _links(block: Bullets) -> list[tuple[str, str] | None]:
    return [*block.links, *[None] * (len(block.items) - len(block.links))]


def to_markdown(blocks: list[Block], figure_dir: str = "plots") -> str:
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            out.append("#" * block.level + " " + block.text)
        elif isinstance(block, Para):
            out.append((f"**{block.lead}** " if block.lead else "") + block.text)
        elif isinstance(block, Bullets):
            out.append("\n".join(md_item(lead, text, link) for (lead, text), link in zip(block.items, _links(block))))
        elif isinstance(block, Table):
            out.append(_md_table(block))
        elif isinstance(block, FigureBlock):
            out.append(f"![{block.name}]({figure_dir}/{block.name}.png)\n\n*{block.caption}*")
    return "\n\n".join(out) + "\n"


def _md_table(table: Table) -> str:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(cell(h) for h in table.headers) + " |",
             "|" + "|".join("---:" if i >= table.numeric_from else "---" for i in range(len(table.headers))) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in table.rows]
    if table.note:
        lines.append("\n" + table.note)
    return "\n".join(lines)


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1180px;margin:24px auto;
padding:0 20px;color:#1d2330;line-height:1.45}
h1{font-size:26px;margin-bottom:4px}h2{font-size:20px;border-bottom:1px solid #d8dde6;padding-bottom:4px;
margin-top:34px}h3{font-size:16px;margin-top:22px}
.callout{background:#f3f6fb;border-left:5px solid #4C72B0;padding:10px 18px;margin:12px 0}
.callout li{margin:6px 0}.callout.warn{border-left-color:#DD8452;background:#fdf6f0}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{padding:4px 8px;border-bottom:1px solid #e3e7ee}
th{background:#eef1f6;text-align:left;position:sticky;top:0}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr:nth-child(even) td{background:#fafbfd}.note{font-size:12px;color:#5a6272}
figure{margin:18px 0}figure img{max-width:100%;border:1px solid #e3e7ee}figcaption{font-size:13px;color:#4a5262}
.scroll{overflow-x:auto}
nav.toc{font-size:14px;margin:18px 0 0;padding:8px 0;border-top:1px solid #d8dde6}
nav.toc ol{display:flex;flex-wrap:wrap;gap:4px 20px;margin:6px 0 0;padding:0;list-style:none}
"""


def to_html(blocks: list[Block], title: str) -> str:
    esc = html.escape
    out = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
           f"<style>{CSS}</style></head><body>"]
    ids: dict[str, int] = {}  # GitHub's rule for a repeated heading: 'x', then 'x-1', 'x-2'
    contents: list[tuple[str, str]] = []  # (anchor, text) of each section heading, for the table of contents
    toc_at = -1  # where the contents go: after the first section (the answer stays first), before the second
    for block in blocks:
        if isinstance(block, Heading):
            anchor = slug(block.text)
            seen = ids.get(anchor, 0)
            ids[anchor] = seen + 1
            anchor += f"-{seen}" if seen else ""
            if block.level == 2:
                toc_at = len(out) if len(contents) == 1 else toc_at
                contents.append((anchor, block.text))
            out.append(f"<h{block.level} id='{esc(anchor)}'>{esc(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            lead = f"<b>{esc(block.lead)}</b> " if block.lead else ""
            out.append(f"<p>{lead}{esc(block.text)}</p>")
        elif isinstance(block, Bullets):
            items = "".join(f"<li>{f'<b>{esc(lead)}</b> ' if lead else ''}{esc(text)}{_html_link(link)}</li>"
                            for (lead, text), link in zip(block.items, _links(block)))
            cls = f" class='callout {block.callout}'" if block.callout else ""
            out.append(f"<ul{cls}>{items}</ul>")
        elif isinstance(block, Table):
            head = "".join(f"<th>{esc(h)}</th>" for h in block.headers)
            body = "".join(
                "<tr>" + "".join(f"<td{' class=num' if i >= block.numeric_from else ''}>{esc(c)}</td>"
                                 for i, c in enumerate(row)) + "</tr>"
                for row in block.rows)
            note = f"<p class='note'>{esc(block.note)}</p>" if block.note else ""
            out.append(f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                       f"</div>{note}")
        elif isinstance(block, FigureBlock):
            data = base64.b64encode(block.png).decode("ascii")
            out.append(f"<figure><img alt='{esc(block.name)}' src='data:image/png;base64,{data}'>"
                       f"<figcaption>{esc(block.caption)}</figcaption></figure>")
    if len(contents) > 1:
        out.insert(toc_at, _toc(contents))
    out.append("</body></html>")
    return "\n".join(out)


def _toc(contents: list[tuple[str, str]]) -> str:
    items = "".join(f"<li><a href='#{html.escape(anchor)}'>{html.escape(text)}</a></li>" for anchor, text in contents)
    return f"<nav class='toc' aria-label='Contents'><b>Contents</b><ol>{items}</ol></nav>"


def _html_link(link: tuple[str, str] | None) -> str:
    return f" (<a href='#{html.escape(slug(link[1]))}'>{html.escape(link[0])}</a>)" if link else ""
