"""nbconvert's part of the site: the page template (:data:`PAGE_TEMPLATE`, over nbconvert's ``lab``
template), the exporter that fills it (formulas as MathML, markdown tables repaired), and
nbconvert's theme stylesheets, written once for the whole site (:func:`styles_to_files`) with its
dark theme beside them (:data:`DARK_THEME`).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from nodecourse.course import site_markdown

PAGE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{# nothing on these pages needs require.js, mermaid or MathJax (nbconvert would load each from a CDN;
   formulas are MathML, converted when the site is built) #}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{# nbconvert's image block, with a description (alt) that prepare_notebook gives each image #}
{% block data_png scoped %}
<div class="jp-RenderedImage jp-OutputArea-output {{ extra_class }}">
<img src="data:image/png;base64,{{ output.data['image/png'] | escape_html }}" alt="{{ output.metadata.get('nc_alt', 'Figure') | escape_html }}">
</div>
{% endblock data_png %}
{# a folded cell (site_notebook.folds): its code behind a "show the code" fold, its output shown #}
{% block input_group -%}
{%- if cell.metadata.get('nc_fold') -%}
<details class="nc-fold"><summary>{{ cell.metadata.get('nc_fold') | escape_html }}</summary>{{ super() }}</details>
{%- else -%}{{ super() }}{%- endif -%}
{%- endblock input_group %}
{% block extra_css %}<meta name="description" content="{{ resources.metadata.name | escape_html }}"><link rel="stylesheet" href="_static/site.css">{% endblock extra_css %}
{# the figures' script goes inside <body>, with the site's (site._finish), not after it #}
{% block footer_js %}{% endblock footer_js %}
"""  # noqa: E501 (HTML template lines)


def exporter():
    from jinja2 import DictLoader, pass_context
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    class CourseExporter(HTMLExporter):
        """nbconvert's lab HTML with formulas as MathML and markdown tables repaired."""

        @pass_context
        def markdown2html(self, context, source):  # the same arguments as nbconvert's filter
            cell = context.get("cell", {})
            renderer = site_markdown.CourseRenderer(
                escape=False,
                attachments=cell.get("attachments", {}),
                embed_images=self.embed_images,
                path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                anchor_link_text=self.anchor_link_text,
                exclude_anchor_links=self.exclude_anchor_links,
                **self.lexer_options,
            )
            return MarkdownWithMath(renderer=renderer).render(site_markdown.repair_table_pipes(source))

    exporter = CourseExporter(template_name="lab", extra_loaders=[DictLoader({"nc_page.html.j2": PAGE_TEMPLATE})])
    exporter.template_file = "nc_page.html.j2"
    return exporter


_HEAD_STYLE = re.compile(r"<style[^>]*>(.*?)</style>", re.DOTALL)


def styles_to_files(page_html: str, out: Path) -> str:
    """``page_html`` with each ``<style>`` of its ``<head>`` (nbconvert's theme: about 262 KB, the
    same on every page) written once to ``_static/nb-<hash>.css`` and linked in its place, so a
    browser loads it once for the whole site. Styles in the body (an output's own) stay."""
    import hashlib

    head_end = page_html.find("</head>")
    if head_end < 0:
        return page_html

    def to_file(match: re.Match) -> str:
        css = match.group(1)
        name = f"_static/nb-{hashlib.sha256(css.encode('utf-8')).hexdigest()[:12]}.css"
        target = out / name
        if not target.is_file():
            target.write_text(css, encoding="utf-8")
        return f'<link rel="stylesheet" href="{name}">'

    return _HEAD_STYLE.sub(to_file, page_html[:head_end]) + DARK_THEME_LINK + page_html[head_end:]


#: nbconvert's dark JupyterLab theme (its lab template's ``static/theme-dark.css``), for a reader
#: whose system asks for dark colours; the site's stylesheet sets its own colours over it.
DARK_THEME = "_static/theme-dark.css"
DARK_THEME_LINK = f'<link rel="stylesheet" href="{DARK_THEME}" media="(prefers-color-scheme: dark)">'


def copy_dark_theme(exporter, out: Path) -> None:
    for folder in exporter.template_paths:
        source = Path(folder) / "static" / "theme-dark.css"
        if source.is_file():
            shutil.copy2(source, out / DARK_THEME)
            return
    raise FileNotFoundError(
        f"nbconvert's lab template has no static/theme-dark.css in {exporter.template_paths}: "
        "reinstall nbconvert (make setup)"
    )
