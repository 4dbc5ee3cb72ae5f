"""MkDocs hook: the docstrings use Sphinx roles (:func:`x`), which mkdocstrings' Google parser leaves
as text before the code span; drop the role name so that `x` reads as code."""

import re

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):(?=<code>)")


def on_page_content(html, **kwargs):
    return _ROLE.sub("", html)
