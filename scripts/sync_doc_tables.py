"""Rewrite the tables of the docs that are copies of committed result files.

A copied table stands between two markers, the first naming where it comes from::

    <!-- generated-from: benchmarks/suite/results/report.md#average-rank-lower-is-better -->

    | method | all, end | ... |
    |---|---|---|
    | ... |

    <!-- end generated -->

The source is a path from the repository's root, then ``#`` and a key:

- ``#SLUG`` (or ``#SLUG:N``): the first (or N-th, from 1) Markdown table of the section whose
  heading has that GitHub-style anchor (lower case, punctuation dropped, spaces to ``-``:
  ``## Average rank (lower is better)`` is ``average-rank-lower-is-better``); the section
  runs to the next heading of the same or a higher level;
- ``#L12-L20``: lines 12 to 20 of the file, as they are;
- no key: the whole file.

Options after the source narrow a table: ``rows="a;b"`` keeps the rows whose first cell is one
of these (in the file's order), ``cols="a;b"`` the columns with these headers (in the file's
order). Nothing else is changed: numbers are written as the result file has them.

    python scripts/sync_doc_tables.py            # rewrite the blocks from the result files
    python scripts/sync_doc_tables.py --check    # exit 1, with a diff, if any block differs

Figures copied into ``docs/img/`` from a result folder (``FIGURES``) are copied or checked the
same way. By default the docs are README.md, CHANGELOG.md, docs/*.md, benchmarks/README.md,
benchmarks/suite/README.md and the benchmark reports, benchmarks/reports/*.md; other files can
be named on the command line.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
import difflib
from pathlib import Path
import re
import shlex
import shutil
import sys


REPO = Path(__file__).resolve().parents[1]

START = re.compile(r"^<!-- generated-from: (?P<spec>.+?) -->$")
END = "<!-- end generated -->"
HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<title>.+?)\s*#*\s*$")
LINES_KEY = re.compile(r"^L(?P<first>\d+)-L(?P<last>\d+)$")

# Figures shown by the docs that are copies of a result folder's figure: (copy, source). The
# benchmark reports show the result folders' figures themselves.
FIGURES: tuple[tuple[str, str], ...] = (
    ("docs/img/suite_regret_vs_cost.png", "benchmarks/suite/results/regret_vs_cost.png"),
)


class SyncError(Exception):
    """A marker or a source that cannot be resolved."""


def default_docs(root: Path = REPO) -> list[Path]:
    """The documents whose generated blocks are kept in sync."""
    docs = [root / "README.md", root / "CHANGELOG.md", *sorted((root / "docs").glob("*.md"))]
    docs += [root / "benchmarks" / "README.md", root / "benchmarks" / "suite" / "README.md"]
    docs += sorted((root / "benchmarks" / "reports").glob("*.md"))
    return [d for d in docs if d.is_file()]


def slugify(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = title.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@dataclass(frozen=True)
class Source:
    """Where a generated block comes from."""

    path: str
    key: str | None
    rows: tuple[str, ...] | None
    cols: tuple[str, ...] | None

    @classmethod
    def parse(cls, spec: str) -> Source:
        try:
            words = shlex.split(spec)
        except ValueError as exc:
            raise SyncError(f"cannot read the marker {spec!r}: {exc}") from exc
        if not words:
            raise SyncError("a generated-from marker without a source")
        path, _, key = words[0].partition("#")
        options: dict[str, tuple[str, ...]] = {}
        for word in words[1:]:
            name, sep, value = word.partition("=")
            if not sep or name not in ("rows", "cols"):
                raise SyncError(f"unknown option {word!r} in {spec!r} (rows=..., cols=...)")
            options[name] = tuple(v.strip() for v in value.split(";") if v.strip())
        return cls(path, key or None, options.get("rows"), options.get("cols"))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _plain(cell: str) -> str:
    return cell.replace("**", "").replace("`", "").strip()


def _tables(lines: Sequence[str]) -> list[list[str]]:
    """The Markdown tables among these lines (runs of lines starting with '|')."""
    tables: list[list[str]] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line.lstrip().startswith("|"):
            current.append(line.rstrip())
        elif current:
            if len(current) >= 2 and set(current[1].replace("|", "").strip()) <= set("-: "):
                tables.append(current)
            current = []
    return tables


def _section(lines: Sequence[str], slug: str, path: str) -> list[str]:
    in_code = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = None if in_code else HEADING.match(line)
        if match and slugify(match["title"]) == slug:
            level = len(match["hashes"])
            body: list[str] = []
            for later in lines[i + 1 :]:
                found = HEADING.match(later)
                if found and len(found["hashes"]) <= level:
                    break
                body.append(later)
            return body
    raise SyncError(f"{path}: no heading with the anchor #{slug}")


def _narrow(table: list[str], source: Source) -> list[str]:
    header = _cells(table[0])
    keep = list(range(len(header)))
    if source.cols is not None:
        plain = [_plain(h) for h in header]
        missing = [c for c in source.cols if c not in plain]
        if missing:
            raise SyncError(f"{source.path}: no column {missing} in the table ({plain})")
        keep = [i for i, h in enumerate(plain) if h in source.cols]
    body = table[2:]
    if source.rows is not None:
        firsts = [_plain(_cells(row)[0]) for row in body]
        missing = [r for r in source.rows if r not in firsts]
        if missing:
            raise SyncError(f"{source.path}: no row {missing} in the table")
        body = [row for row, first in zip(body, firsts, strict=True) if first in source.rows]
    if source.cols is None:
        return [table[0], table[1], *body]

    def pick(line: str) -> str:
        cells = _cells(line)
        return "| " + " | ".join(cells[i] for i in keep) + " |"

    return [pick(table[0]), "|" + "---|" * len(keep), *(pick(row) for row in body)]


def extract(source: Source, root: Path = REPO) -> list[str]:
    """The lines a block with this source holds."""
    file = root / source.path
    if not file.is_file():
        raise SyncError(f"result file not found: {source.path}")
    lines = file.read_text(encoding="utf-8").splitlines()
    key = source.key
    if key is None:
        content = lines
    elif match := LINES_KEY.match(key):
        first, last = int(match["first"]), int(match["last"])
        if not 1 <= first <= last <= len(lines):
            raise SyncError(f"{source.path}: lines {first}-{last} outside 1-{len(lines)}")
        content = lines[first - 1 : last]
    else:
        slug, _, number = key.partition(":")
        index = int(number) if number else 1
        tables = _tables(_section(lines, slug, source.path))
        if not 1 <= index <= len(tables):
            raise SyncError(f"{source.path}#{slug}: {len(tables)} table(s), not a table {index}")
        content = tables[index - 1]
    if source.rows is not None or source.cols is not None:
        tables = _tables(content)
        if len(tables) != 1:
            raise SyncError(f"{source.path}: rows= and cols= need exactly one table")
        content = _narrow(tables[0], source)
    while content and not content[-1].strip():
        content = content[:-1]
    return list(content)


@dataclass(frozen=True)
class Block:
    """One generated block of a document: its source and the lines between its markers."""

    source: Source
    start: int  # index of the start marker
    end: int  # index of the end marker


def find_blocks(lines: Sequence[str], doc: str = "") -> list[Block]:
    """The generated blocks of a document, in order."""
    blocks: list[Block] = []
    open_at: int | None = None
    spec = ""
    for i, line in enumerate(lines):
        match = START.match(line.strip())
        if match:
            if open_at is not None:
                raise SyncError(
                    f"{doc}:{i + 1}: a block opens inside the block of line {open_at + 1}"
                )
            open_at, spec = i, match["spec"]
        elif line.strip() == END:
            if open_at is None:
                raise SyncError(f"{doc}:{i + 1}: '{END}' without a start marker")
            blocks.append(Block(Source.parse(spec), open_at, i))
            open_at = None
        elif line.lstrip().startswith("<!-- generated-from"):
            raise SyncError(f"{doc}:{i + 1}: malformed marker {line.strip()!r}")
    if open_at is not None:
        raise SyncError(f"{doc}:{open_at + 1}: a block without '{END}'")
    return blocks


def render(text: str, root: Path = REPO, doc: str = "") -> str:
    """The document with every generated block rewritten from its source."""
    lines = text.splitlines()
    out: list[str] = []
    last = 0
    for block in find_blocks(lines, doc):
        out.extend(lines[last : block.start + 1])
        out.extend(["", *extract(block.source, root), ""])
        out.append(lines[block.end])
        last = block.end + 1
    out.extend(lines[last:])
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def sync(
    docs: Sequence[Path],
    *,
    check: bool,
    root: Path = REPO,
    figures: Sequence[tuple[str, str]] = FIGURES,
) -> list[str]:
    """Rewrite (or, with ``check``, compare) the docs and figures; the problems found."""
    problems: list[str] = []
    for doc in docs:
        name = str(doc.relative_to(root)) if doc.is_relative_to(root) else str(doc)
        text = doc.read_text(encoding="utf-8")
        try:
            new = render(text, root, name)
        except SyncError as exc:
            problems.append(str(exc))
            continue
        if new == text:
            continue
        if check:
            diff = difflib.unified_diff(
                text.splitlines(),
                new.splitlines(),
                name,
                f"{name} (from the result files)",
                n=1,
                lineterm="",
            )
            problems.append(
                f"{name}: generated blocks differ from their sources\n" + "\n".join(diff)
            )
        else:
            doc.write_text(new, encoding="utf-8")
    for copy, source in figures:
        src, dst = root / source, root / copy
        if not src.is_file():
            problems.append(f"figure source not found: {source}")
        elif not dst.is_file() or dst.read_bytes() != src.read_bytes():
            if check:
                problems.append(f"{copy} is not a copy of {source}")
            else:
                shutil.copyfile(src, dst)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("docs", nargs="*", type=Path, help="documents (default: all docs)")
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a block differs"
    )
    args = parser.parse_args(argv)
    docs = [d.resolve() for d in args.docs] or default_docs()
    problems = sync(docs, check=args.check)
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
