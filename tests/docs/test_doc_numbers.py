"""The numbers of the docs come from committed result files, and copied tables are current.

- Every result file the docs cite (a path under a ``results/`` folder, or a result file's
  name) exists, and so does every file a ``--8<--`` line includes, with its line range.
- Every block between ``<!-- generated-from: ... -->`` and ``<!-- end generated -->`` equals
  what ``scripts/sync_doc_tables.py`` writes from its source (a retyped or stale table fails),
  and the figures the sync copies are copies.
- A table outside those blocks does not have the header of a result file's table: a copy of
  a result table must be generated, not retyped.
- The benchmark reports (``benchmarks/reports/*.md``, outside the user guide) are among the
  documents checked, and their links, which no mkdocs build checks, lead to committed files;
  so do the docs' links to them.
- Constructed cases: the check fails on a changed number, a changed source, a missing
  source, and narrows tables by rows, columns and line ranges as documented.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
import re
import sys
from types import ModuleType

import pytest


REPO = Path(__file__).resolve().parents[2]
RESULT_DIRS = (REPO / "benchmarks" / "results", REPO / "benchmarks" / "suite" / "results")


def _load_sync() -> ModuleType:
    path = REPO / "scripts" / "sync_doc_tables.py"
    spec = importlib.util.spec_from_file_location("sync_doc_tables", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sync = _load_sync()
DOCS = sync.default_docs()
DOC_IDS = [str(d.relative_to(REPO)) for d in DOCS]

CODE_SPAN = re.compile(r"`([^`\s]+)`")
SNIPPET = re.compile(r'^\s*--8<-- "(?P<path>[^":]+)(?::(?P<first>\d+):(?P<last>\d+))?"\s*$')
PLACEHOLDER = re.compile(r"\b[A-Z]{3,}\b")  # NAME, DIR, FILE: a pattern, not a file
RESULT_NAME = re.compile(r"^[a-z0-9]+(?:_[a-z0-9.]+)+\.(?:md|csv|json|png)$|^report[\w.]*\.md$")


def _cited_result_files(text: str) -> set[str]:
    """Backticked paths under a results/ folder, and backticked bare result-file names."""
    cited = set()
    for token in CODE_SPAN.findall(text):
        token = token.rstrip(".,;:)")
        if (
            any(ch in token for ch in "<>*{}$")
            or token.startswith("/")
            or token.endswith("/")  # a folder
            or PLACEHOLDER.search(token)
        ):
            continue
        name = token.rsplit("/", 1)[-1]
        if "results/" in token or ("/" not in token and RESULT_NAME.match(name)):
            cited.add(token)
    return cited


def _resolves(token: str, doc: Path) -> bool:
    bases = [REPO, doc.parent, REPO / "benchmarks" / "suite", *RESULT_DIRS]
    return any((base / token).is_file() for base in bases)


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_cited_result_files_exist(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    missing = sorted(t for t in _cited_result_files(text) if not _resolves(t, doc))
    assert not missing, f"{doc.name} cites result files that are not committed: {missing}"


def test_the_docs_cite_result_files() -> None:
    cited = set().union(*(_cited_result_files(d.read_text(encoding="utf-8")) for d in DOCS))
    for name in (
        "benchmarks/suite/results/report_13x20_all_methods.md",
        "benchmarks/suite/results/report_13x20_default_rollout.md",
        "benchmarks/results/suggest_speed_rollout.md",
    ):
        assert name in cited


def test_the_citation_scan_finds_a_missing_file(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    text = "See `benchmarks/suite/results/report_99x99_nothing.md` and `report.md`."
    doc.write_text(text)
    cited = _cited_result_files(text)
    assert cited == {"benchmarks/suite/results/report_99x99_nothing.md", "report.md"}
    assert not _resolves("benchmarks/suite/results/report_99x99_nothing.md", doc)
    assert _resolves("report.md", doc)  # found in the suite's results


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_included_result_files_exist(doc: Path) -> None:
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        match = SNIPPET.match(line)
        if not match:
            continue
        path = REPO / match["path"]
        assert path.is_file(), f"{doc.name}:{number}: {match['path']} is not committed"
        if match["first"]:
            n_lines = len(path.read_text(encoding="utf-8").splitlines())
            first, last = int(match["first"]), int(match["last"])
            assert 1 <= first <= last <= n_lines, (
                f"{doc.name}:{number}: lines {first}-{last} of {match['path']} ({n_lines} lines)"
            )


def test_generated_blocks_match_their_result_files() -> None:
    problems = sync.sync(DOCS, check=True)
    assert not problems, "run `python scripts/sync_doc_tables.py`:\n" + "\n\n".join(problems)


def _sources(path: Path) -> set[str]:
    return {b.source.path for b in sync.find_blocks(path.read_text(encoding="utf-8").splitlines())}


def test_the_suite_tables_of_the_docs_are_generated() -> None:
    sources = _sources(REPO / "docs" / "benchmarks.md")
    assert "benchmarks/results/startup-real/report.md" in sources
    assert "benchmarks/results/startup-synthetic/all/report.md" in sources
    assert "benchmarks/suite/results/report_13x20_all_methods.md" in sources
    concepts = _sources(REPO / "docs" / "concepts.md")
    assert "benchmarks/suite/results/report_13x20_default_rollout.md" in concepts
    assert sync.find_blocks(
        (REPO / "benchmarks" / "suite" / "README.md").read_text(encoding="utf-8").splitlines()
    )


REPORTS = sorted((REPO / "benchmarks" / "reports").glob("*.md"))
MD_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")
REPO_URL = "https://github.com/optuna-costbo/optuna-costbo/blob/main/"


def test_the_reports_are_checked_documents() -> None:
    names = {d.name for d in DOCS if d.parent == REPO / "benchmarks" / "reports"}
    assert {"README.md", "pruning.md", "stopping.md", "suite.md"} <= names
    for report in ("pruning.md", "stopping.md", "suite.md"):
        assert _sources(REPO / "benchmarks" / "reports" / report), report


def _broken_links(doc: Path, *, repository_only: bool = False) -> list[str]:
    """The links of a document that lead nowhere: relative ones (unless ``repository_only``)
    and links to a file of this repository on GitHub."""
    broken = []
    for match in MD_LINK.finditer(doc.read_text(encoding="utf-8")):
        target = match["target"].split("#", 1)[0]
        if target.startswith(REPO_URL):
            path = REPO / target.removeprefix(REPO_URL)
        elif repository_only or not target or "://" in target or target.startswith("mailto:"):
            continue
        else:
            path = doc.parent / target
        if not path.exists():
            broken.append(match["target"])
    return broken


@pytest.mark.parametrize("doc", REPORTS, ids=[r.name for r in REPORTS])
def test_the_links_of_a_report_lead_to_committed_files(doc: Path) -> None:
    broken = _broken_links(doc)
    assert not broken, f"{doc.name} links to missing files: {broken}"


@pytest.mark.parametrize("doc", DOCS, ids=DOC_IDS)
def test_the_links_to_the_repository_lead_to_committed_files(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    broken = _broken_links(doc, repository_only=True)
    broken += [
        path
        for path in re.findall(r"`(benchmarks/reports/[^`\s]+\.md)`", text)
        if not (REPO / path).is_file()
    ]
    assert not broken, f"{doc.name} names missing files: {broken}"


def test_the_link_check_finds_a_missing_file(tmp_path: Path) -> None:
    doc = tmp_path / "report.md"
    (tmp_path / "here.md").write_text("x")
    doc.write_text(
        "[a](here.md#x) [b](gone.md) [c](https://example.org/x) [d](#anchor) "
        f"[e]({REPO_URL}benchmarks/reports/no_such_report.md) "
        f"[f]({REPO_URL}benchmarks/reports/pruning.md#x)"
    )
    assert _broken_links(doc) == ["gone.md", f"{REPO_URL}benchmarks/reports/no_such_report.md"]
    assert _broken_links(doc, repository_only=True) == [
        f"{REPO_URL}benchmarks/reports/no_such_report.md"
    ]


# Shown away from the repository (PyPI's project page, OptunaHub), where relative links break.
INDEX_PAGES = ["README.md", "package/samplers/cost_rollout/README.md"]
LINK_TARGETS = (
    MD_LINK,  # [text](target), ![alt](target)
    re.compile(r"^\s*\[[^\]]+\]:\s*(?P<target>\S+)", re.MULTILINE),  # [label]: target
    re.compile(r"\b(?:href|src)=[\"'](?P<target>[^\"']+)"),  # HTML
)


def _relative_links(text: str) -> list[str]:
    targets = [m["target"] for pattern in LINK_TARGETS for m in pattern.finditer(text)]
    return [t for t in targets if not t.startswith(("https://", "http://", "mailto:"))]


@pytest.mark.parametrize("page", INDEX_PAGES)
def test_a_page_shown_on_a_package_index_has_only_absolute_links(page: str) -> None:
    relative = _relative_links((REPO / page).read_text(encoding="utf-8"))
    assert not relative, f"{page} has relative links, write them as {REPO_URL}<path>: {relative}"


def test_the_repository_url_of_the_links_is_the_declared_one() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in Python 3.11 and later")
    urls = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["urls"]
    assert REPO_URL == urls["Repository"] + "/blob/main/"


def test_the_relative_link_check_finds_each_kind() -> None:
    text = (
        "[a](docs/x.md) ![b](img/y.png) [c](#anchor) [d](https://example.org/x)\n"
        '[e]: docs/z.md\n<img src="img/w.png"> <a href="https://example.org">f</a>'
    )
    assert _relative_links(text) == ["docs/x.md", "img/y.png", "#anchor", "docs/z.md", "img/w.png"]


# Constructed cases: a result file, a document that copies from it.

RESULT = """# Report

Command: `python -m something --report-only`

## Average rank (lower is better)

Some words.

| method | end | half |
|---|---|---|
| ours rollout h=2 | 4.3 | 5.06 |
| ours EIpu | 4.8 | 5.25 |
| Random | 9.41 | 7.94 |

### Per problem

| problem | ours rollout h=2 | Random |
|---|---|---|
| branin | 3.55 | 10.6 |

## Paired tests: `rollout` against each method

| method | end: better/same/worse |
|---|---|
| ours EIpu | 4/9/0 |
"""


def _write_case(tmp_path: Path, marker: str) -> Path:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.md").write_text(RESULT)
    doc = tmp_path / "doc.md"
    doc.write_text(
        f"# Doc\n\nText.\n\n{marker}\n\n| stale |\n|---|\n\n<!-- end generated -->\n\nMore.\n"
    )
    return doc


def _sync(doc: Path, root: Path, *, check: bool) -> list[str]:
    return sync.sync([doc], check=check, root=root, figures=())


def test_a_block_is_rewritten_then_checks_clean(tmp_path: Path) -> None:
    doc = _write_case(
        tmp_path, "<!-- generated-from: results/r.md#average-rank-lower-is-better -->"
    )
    assert _sync(doc, tmp_path, check=True)  # the stale block differs
    assert not _sync(doc, tmp_path, check=False)
    text = doc.read_text()
    assert "| ours EIpu | 4.8 | 5.25 |" in text
    assert "| branin |" not in text  # only the section's first table
    assert text.startswith("# Doc\n\nText.\n") and text.endswith(
        "<!-- end generated -->\n\nMore.\n"
    )
    assert not _sync(doc, tmp_path, check=True)


def test_a_changed_number_in_the_doc_fails_the_check(tmp_path: Path) -> None:
    doc = _write_case(
        tmp_path, "<!-- generated-from: results/r.md#average-rank-lower-is-better -->"
    )
    _sync(doc, tmp_path, check=False)
    doc.write_text(doc.read_text().replace("| 4.3 |", "| 4.30 |"))  # retyped, "the same"
    problems = _sync(doc, tmp_path, check=True)
    assert len(problems) == 1
    assert "-| ours rollout h=2 | 4.30 | 5.06 |" in problems[0]
    assert "+| ours rollout h=2 | 4.3 | 5.06 |" in problems[0]


def test_a_changed_result_file_fails_the_check(tmp_path: Path) -> None:
    doc = _write_case(
        tmp_path, "<!-- generated-from: results/r.md#average-rank-lower-is-better -->"
    )
    _sync(doc, tmp_path, check=False)
    result = tmp_path / "results" / "r.md"
    result.write_text(result.read_text().replace("| 9.41 |", "| 9.5 |"))
    assert _sync(doc, tmp_path, check=True)


def test_the_check_changes_nothing(tmp_path: Path) -> None:
    doc = _write_case(
        tmp_path, "<!-- generated-from: results/r.md#average-rank-lower-is-better -->"
    )
    before = doc.read_text()
    assert _sync(doc, tmp_path, check=True)
    assert doc.read_text() == before


def test_a_missing_source_or_section_is_a_problem(tmp_path: Path) -> None:
    doc = _write_case(tmp_path, "<!-- generated-from: results/gone.md#average-rank -->")
    assert any("not found" in p for p in _sync(doc, tmp_path, check=True))
    doc.write_text(doc.read_text().replace("gone.md#average-rank", "r.md#no-such-heading"))
    assert any("no heading" in p for p in _sync(doc, tmp_path, check=True))


def test_unclosed_and_malformed_markers_are_problems(tmp_path: Path) -> None:
    doc = _write_case(
        tmp_path, "<!-- generated-from: results/r.md#average-rank-lower-is-better -->"
    )
    doc.write_text(doc.read_text().replace("<!-- end generated -->", ""))
    assert any("without" in p for p in _sync(doc, tmp_path, check=True))
    doc.write_text("<!-- generated-from results/r.md -->\n")
    assert any("malformed" in p for p in _sync(doc, tmp_path, check=True))


def test_rows_cols_lines_and_numbered_tables(tmp_path: Path) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "r.md").write_text(RESULT)
    root = tmp_path
    rows = sync.Source.parse('results/r.md#average-rank-lower-is-better rows="Random;ours EIpu"')
    assert sync.extract(rows, root) == [
        "| method | end | half |",
        "|---|---|---|",
        "| ours EIpu | 4.8 | 5.25 |",
        "| Random | 9.41 | 7.94 |",
    ]
    cols = sync.Source.parse('results/r.md#average-rank-lower-is-better cols="method;half"')
    assert sync.extract(cols, root)[2] == "| ours rollout h=2 | 5.06 |"
    second = sync.Source.parse("results/r.md#average-rank-lower-is-better:2")
    assert sync.extract(second, root)[2] == "| branin | 3.55 | 10.6 |"
    paired = sync.Source.parse("results/r.md#paired-tests-rollout-against-each-method")
    assert sync.extract(paired, root)[2] == "| ours EIpu | 4/9/0 |"
    lines = sync.Source.parse("results/r.md#L3-L3")
    assert sync.extract(lines, root) == ["Command: `python -m something --report-only`"]
    with pytest.raises(sync.SyncError):
        sync.extract(sync.Source.parse("results/r.md#L3-L999"), root)
    with pytest.raises(sync.SyncError):
        sync.extract(sync.Source.parse('results/r.md#per-problem rows="nothing"'), root)


def test_the_sync_checks_copied_figures(tmp_path: Path) -> None:
    (tmp_path / "src.png").write_bytes(b"figure 1")
    (tmp_path / "copy.png").write_bytes(b"figure 0")
    figures = (("copy.png", "src.png"),)
    assert sync.sync([], check=True, root=tmp_path, figures=figures)
    assert not sync.sync([], check=False, root=tmp_path, figures=figures)
    assert (tmp_path / "copy.png").read_bytes() == b"figure 1"
    assert not sync.sync([], check=True, root=tmp_path, figures=figures)


def test_the_command_line_check_exits_non_zero_on_a_stale_block(tmp_path: Path) -> None:
    # The real docs through the command line: clean now (exit 0); a stale copy fails (exit 1).
    assert sync.main(["--check"]) == 0
    doc = tmp_path / "stale.md"
    source = "benchmarks/suite/results/report_13x20_all_methods.md"
    doc.write_text(
        f"<!-- generated-from: {source}#average-rank-lower-is-better -->\n\n"
        "| method | all, end |\n|---|---|\n| ours rollout h=2 | 4.30 |\n\n<!-- end generated -->\n"
    )
    assert sync.main(["--check", str(doc)]) == 1
