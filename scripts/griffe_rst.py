"""A Griffe extension that lets mkdocstrings render the package's reST-flavoured docstrings.

The docstrings follow Optuna's conventions: Google-style sections, with reStructuredText inside
(``.. code-block:: python`` examples and ``:class:`~optuna_costbo.CostRolloutSampler``` roles).
mkdocstrings renders Markdown. This extension, loaded from ``mkdocs.yml``, rewrites each
docstring as it is loaded, without touching the source:

- ``.. code-block:: LANG`` plus its indented block becomes a fenced ``LANG`` code block (and
  an ``Example:`` title directly above it a Google "Examples" section);
- ``:class:`~a.b.C```, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``, ``:mod:`` and ``:exc:``
  roles become optional cross-references: a link when the target is documented on the site,
  plain code otherwise (``~`` keeps only the last name, as in Sphinx).

Docstrings that are plain Markdown already pass through unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import griffe


_ROLE = re.compile(r":(?:class|func|meth|attr|data|mod|exc|obj):`(~?)([^`]+)`")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. code-block::[ \t]*(?P<lang>\S*)[ \t]*$")


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


# "Example:" then a blank line is not a Google section for Griffe; without the blank line it is.
_SECTION_GAP = re.compile(r"^([ \t]*Examples?:)[ \t]*\n[ \t]*\n(?=[ \t]+\.\. code-block::)", re.M)


def code_blocks_to_fences(text: str) -> str:
    """Turn each ``.. code-block:: LANG`` directive and its indented body into a fence."""
    lines = _SECTION_GAP.sub(r"\1\n", text).splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        if match is None:
            out.append(lines[i])
            i += 1
            continue
        indent = match["indent"]
        base = len(indent)
        j = i + 1
        body: list[str] = []
        while j < len(lines) and (not lines[j].strip() or _indent_of(lines[j]) > base):
            body.append(lines[j])
            j += 1
        while body and not body[-1].strip():
            body.pop()
            j -= 1
        while body and not body[0].strip():
            body.pop(0)
        depth = min((_indent_of(line) for line in body if line.strip()), default=0)
        out.append(f"{indent}```{match['lang'] or 'text'}")
        out.extend(indent + line[depth:] if line.strip() else "" for line in body)
        out.append(f"{indent}```")
        i = j
    return "\n".join(out)


def roles_to_autorefs(text: str, scope: str) -> str:
    """Turn Sphinx roles into mkdocs-autorefs optional cross-references.

    A target without a dot (``:meth:`close```) is looked up in ``scope``, the dotted path of
    the class or module the docstring belongs to, as Sphinx does.
    """

    def replace(match: re.Match[str]) -> str:
        tilde, target = match.group(1), match.group(2).strip().removesuffix("()")
        title = target.rsplit(".", 1)[-1] if tilde else target
        identifier = target if "." in target else f"{scope}.{target}"
        return f'<autoref identifier="{identifier}" optional><code>{title}</code></autoref>'

    return _ROLE.sub(replace, text)


_FENCE = re.compile(r"(^[ \t]*```.*?^[ \t]*```[ \t]*$)", flags=re.M | re.S)


def rst_to_markdown(text: str, scope: str = "optuna_costbo") -> str:
    """Both rewrites, code blocks first (roles inside code stay as they are written)."""
    parts = _FENCE.split(code_blocks_to_fences(text))
    return "".join(
        part if k % 2 else roles_to_autorefs(part, scope) for k, part in enumerate(parts)
    )


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring with :func:`rst_to_markdown` when Griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is None:
            return
        owner = obj if obj.is_class or obj.is_module or obj.parent is None else obj.parent
        obj.docstring.value = rst_to_markdown(obj.docstring.value, owner.path)
