"""The documentation builds, and the examples in the package's docstrings run.

- ``mkdocs build --strict`` (MkDocs Material + mkdocstrings) into a temporary directory: any
  broken link, missing page or unknown reference fails it, and the API page's signatures are
  formatted (one parameter a line). Skipped, saying why, when the docs tools are not installed
  (``pip install ".[docs]"``); the docs extra installs a signature formatter.
- ``docs/api.md`` renders every public name of the package and of its public modules, and
  every public method of their classes, and hard-codes no version (it renders the package's).
- Every module's ``>>>`` examples, with :mod:`doctest`.
- Every ``.. code-block:: python`` example in a docstring (the package's docstrings use Optuna's
  style: runnable code blocks rather than ``>>>`` sessions), executed in a temporary directory
  with ``Figure.show`` made a no-op and matplotlib on the Agg backend.
"""

from __future__ import annotations

from collections.abc import Iterator
import doctest
import importlib
import importlib.util
import inspect
import os
from pathlib import Path
import pkgutil
import re
import subprocess
import sys
import textwrap
from types import ModuleType
from typing import Any

import pytest
import yaml

import optuna_costbo


REPO = Path(__file__).resolve().parents[2]
DOCS_TOOLS = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
# mkdocstrings-python formats separate signatures with either of these (Black first).
SIGNATURE_FORMATTERS = ("black", "ruff")

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(optuna_costbo.__path__, prefix="optuna_costbo.")
)
# The modules whose docstrings hold ``>>>`` examples (found in their source: a module without
# one is not a doctest case that passes by collecting nothing).
DOCTEST_MODULES = [
    name
    for name in MODULES
    if ">>> " in Path(importlib.util.find_spec(name).origin or "").read_text()  # type: ignore[union-attr]
]


def _missing_docs_tools() -> list[str]:
    missing = []
    for name in DOCS_TOOLS:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # a missing parent package
            found = False
        if not found:
            missing.append(name)
    if not any(importlib.util.find_spec(name) for name in SIGNATURE_FORMATTERS):
        missing.append(" or ".join(SIGNATURE_FORMATTERS))
    return missing


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    missing = _missing_docs_tools()
    if missing:
        pytest.skip(f"docs tools not installed ({', '.join(missing)}): pip install '.[docs]'")
    site = tmp_path / "site"
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(site)],
        cwd=REPO,  # mkdocs.yml loads scripts/griffe_rst.py relative to here
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"

    api = (site / "api" / "index.html").read_text()
    for identifier in (
        "optuna_costbo.__version__",
        "optuna_costbo.CostRolloutSampler",
        "optuna_costbo.CostRolloutSampler.remaining_budget",
        "optuna_costbo.CostRolloutSampler.recommended_trial",
        "optuna_costbo.CostBudgetPruner",
        "optuna_costbo.report_cost",
        "optuna_costbo.Ledger",
        "optuna_costbo.visualization.plot_cost_history",
        "optuna_costbo.visualization.matplotlib.plot_cost_history",
        "optuna_costbo.progress.CostProgressBar",
        "optuna_costbo.dashboard.update_dashboard",
    ):
        assert f'id="{identifier}"' in api, f"{identifier} is missing from the API page"
    # The signature is formatted: the class name, then one parameter a line.
    start = api.index('id="optuna_costbo.CostRolloutSampler"')
    signature = api[api.index("<code>", api.index('class="doc-signature', start)) :]
    signature = re.sub(r"<[^>]+>", "", signature[: signature.index("</code>")])
    assert re.match(r"\s*CostRolloutSampler\(\n    budget", signature), signature[:200]
    # The version shown is the package's.
    assert f"__version__ = '{optuna_costbo.__version__}'" in re.sub(r"<[^>]+>", "", api)
    # The reST in the docstrings was turned into Markdown, not printed as is.
    assert ".. code-block::" not in api
    assert ":class:`" not in api
    for image in ("acquisitions.png", "dashboard.png"):
        assert (site / "img" / image).is_file()


def test_the_docs_extra_installs_a_signature_formatter() -> None:
    """``pip install ".[docs]"`` must give mkdocstrings what it formats signatures with (read
    from the installed package's metadata, as pip installs the extra)."""
    from importlib import metadata

    requires = metadata.requires("optuna-costbo") or []
    names = {
        re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0]
        for req in requires
        if re.search(r"extra\s*==\s*['\"]docs['\"]", req)
    }
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= names, names
    assert names & set(SIGNATURE_FORMATTERS), names


API_PAGE = REPO / "docs" / "api.md"
# ``::: dotted.path`` and its indented mkdocstrings options.
DIRECTIVE = re.compile(r"^::: (?P<path>\S+)\n(?P<options>(?:    .*\n)*)", re.MULTILINE)
PUBLIC_MODULES = ["optuna_costbo"] + [m for m in MODULES if "._" not in m]


def _public_api() -> dict[str, object]:
    """Every public object by its first dotted path: the ``__all__`` of each public module."""
    api: dict[str, object] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        assert hasattr(module, "__all__"), f"public module {name} needs an __all__"
        for attr in module.__all__:
            obj = getattr(module, attr)
            # A public module is checked on its own; a re-export under its first path.
            if not inspect.ismodule(obj) and not any(obj is seen for seen in api.values()):
                api[f"{name}.{attr}"] = obj
    return api


def _own_public_members(cls: type) -> set[str]:
    """The public methods and properties a class defines, less overrides of a base class from
    another package (Optuna's sampler, pruner and storage hooks: documented by Optuna)."""
    foreign = [b for b in cls.__mro__[1:] if not b.__module__.startswith("optuna_costbo")]
    return {
        name
        for name in vars(cls)
        if not name.startswith("_") and not any(name in vars(base) for base in foreign)
    }


def unrendered_api(page: str) -> list[str]:
    """The public objects and class members no ``:::`` directive of ``page`` renders (a class
    rendered with ``members: [...]`` shows only those; mkdocs.yml hides ``_`` names)."""
    rendered: list[tuple[object, dict[str, Any]]] = []
    for match in DIRECTIVE.finditer(page):
        options = yaml.safe_load(textwrap.dedent(match["options"])) or {}
        rendered.append((pkgutil.resolve_name(match["path"]), options.get("options", {})))
    missing = []
    for path, obj in _public_api().items():
        found = [options for target, options in rendered if target is obj]
        if not found:
            missing.append(path)
        elif inspect.isclass(obj):
            members = found[0].get("members", True)
            shown = set(members) if isinstance(members, list) else set() if not members else None
            if shown is not None:
                missing += [f"{path}.{m}" for m in sorted(_own_public_members(obj) - shown)]
    return sorted(set(missing))


def test_the_api_page_renders_every_public_name() -> None:
    missing = unrendered_api(API_PAGE.read_text())
    assert not missing, f"docs/api.md does not render {missing}"


def test_the_api_page_check_finds_what_is_left_out() -> None:
    page = API_PAGE.read_text()
    assert "        - recommended_trial\n" in page
    page = page.replace("        - recommended_trial\n", "")
    page = page.replace("::: optuna_costbo.stopping.CostAwareStopping\n", "")
    assert unrendered_api(page) == [
        "optuna_costbo.CostRolloutSampler.recommended_trial",
        "optuna_costbo.stopping.CostAwareStopping",
    ]
    assert "reseed_rng" not in _own_public_members(optuna_costbo.CostRolloutSampler)


def test_the_api_page_hard_codes_no_version() -> None:
    versions = re.findall(r"\b\d+\.\d+\.\d+\b", API_PAGE.read_text())
    assert not versions, f"docs/api.md names versions {versions}; it renders __version__"


def test_the_doctest_modules_are_found() -> None:
    assert "optuna_costbo._numerics.acquisition.ei" in DOCTEST_MODULES
    assert "optuna_costbo.sampler" not in DOCTEST_MODULES  # code blocks, tested below


@pytest.mark.parametrize("module_name", DOCTEST_MODULES)
def test_doctests(module_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = importlib.import_module(module_name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    assert result.attempted > 0, f"{module_name} has '>>> ' in its source but no example ran"
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctests failed"


_CODE_BLOCK = re.compile(
    r"^(?P<indent>[ \t]*)\.\. code-block::[ \t]*python[ \t]*\n"
    r"(?P<body>(?:[ \t]*\n|(?P=indent)[ \t]+\S.*\n?)+)",
    re.M,
)


def _documented(module: ModuleType) -> Iterator[tuple[str, Any]]:
    """The module, and the classes, functions and methods defined in it."""
    yield module.__name__, module
    for name, obj in vars(module).items():
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if obj.__module__ != module.__name__:
            continue
        yield f"{module.__name__}.{name}", obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if inspect.isfunction(member) or isinstance(member, property):
                    yield f"{module.__name__}.{name}.{attr}", member


def _code_examples() -> list[Any]:
    params = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for qualname, obj in _documented(module):
            doc = inspect.getdoc(obj) or ""
            for i, match in enumerate(_CODE_BLOCK.finditer(doc)):
                code = textwrap.dedent(match["body"])
                params.append(pytest.param(qualname, code, id=f"{qualname}[{i}]"))
    return params


@pytest.mark.parametrize(("qualname", "code"), _code_examples())
def test_docstring_code_examples(
    qualname: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # examples may write files (tune.db, cost_history.png)
    if "plotly" in code:
        go = pytest.importorskip("plotly.graph_objects")
        monkeypatch.setattr(go.Figure, "show", lambda self, *args, **kwargs: None)
    if "matplotlib" in code:
        matplotlib = pytest.importorskip("matplotlib")
        matplotlib.use("Agg")
    if "tqdm" in code or "CostProgressBar" in code:
        pytest.importorskip("tqdm")
    if "optuna_dashboard" in code or "update_dashboard" in code:
        pytest.importorskip("optuna_dashboard")
    exec(compile(code, f"<docstring example of {qualname}>", "exec"), {"__name__": "__main__"})


def test_the_dashboard_page_says_where_each_piece_shows() -> None:
    from optuna_costbo._ledger.keys import BUDGET_ATTR
    from optuna_costbo._ledger.keys import REMAINING_ATTR
    from optuna_costbo._ledger.keys import SPENT_ATTR
    from optuna_costbo.dashboard import GRAPH_NAME

    text = (REPO / "docs" / "dashboard.md").read_text()
    assert f'"{GRAPH_NAME}" chart' in text
    for attr in (BUDGET_ATTR, SPENT_ATTR, REMAINING_ATTR):
        assert f"`{attr}`" in text
    # The page that holds the cost column, by its current and its earlier name, and the page
    # that renders blank in headless browsers.
    for page in ("Smart Selection", "Trials (Selection)", "Trials (List)", "Trials (Table)"):
        assert page in text
    images = re.findall(r"\]\((img/[^)]+\.png)\)", text)
    assert "img/dashboard.png" in images and "img/dashboard_selection.png" in images
    for image in images:
        assert (REPO / "docs" / image).is_file(), image
