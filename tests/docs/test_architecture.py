"""docs/architecture.md is true: every module it lists exists and every module is listed, and the
rules of the layout hold (the import graph between the folders, Optuna's private API in one
module, module sizes, the package's face)."""

from __future__ import annotations

import ast
from pathlib import Path
import re

import pytest


REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "optuna_costbo"
MAX_LINES = 470  # "about 450"


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(path: Path) -> set[str]:
    """The modules ``path`` imports (absolute names; relative imports resolved)."""
    tree = ast.parse(path.read_text())
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


def _listed() -> set[str]:
    """The files the folder map of docs/architecture.md lists, as paths under the package
    (a folder line ``optuna_costbo/...``, its files indented by 2, a subfolder's by 4)."""
    text = (REPO / "docs" / "architecture.md").read_text()
    block = text.split("```text", 1)[1].split("```", 1)[0]
    listed: set[str] = set()
    folder = subfolder = ""
    for line in block.splitlines():
        if line.startswith("optuna_costbo/"):
            folder, subfolder = line.split()[0].rstrip("/"), ""
            continue
        match = re.match(r"^( +)(\S+)", line)
        if not match:
            continue
        indent, name = len(match.group(1)), match.group(2)
        if indent == 2 and name.endswith("/"):
            subfolder = name.rstrip("/")
            listed.add(f"{folder}/{name}")
        elif indent == 2:
            subfolder = ""
            listed.add(f"{folder}/{name}")
        elif indent == 4 and subfolder:
            listed.add(f"{folder}/{subfolder}/{name}")
    return listed


def test_every_module_is_in_the_folder_map_and_every_listed_file_exists() -> None:
    listed = _listed()
    files = {
        str(p.relative_to(REPO))
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" and "visualization" not in p.parts
    }
    files |= {"optuna_costbo/__init__.py", "optuna_costbo/visualization/"}
    missing = sorted(files - listed)
    assert not missing, f"modules docs/architecture.md does not list: {missing}"
    stale = sorted(p for p in listed if not (REPO / p).exists())
    assert not stale, f"docs/architecture.md lists what does not exist: {stale}"


def test_the_numerical_layer_imports_neither_optuna_nor_the_layers_above() -> None:
    for name, path in _modules().items():
        if not name.startswith("optuna_costbo._numerics"):
            continue
        bad = {
            m
            for m in _imports(path)
            if m.split(".")[0] == "optuna"
            or (m.startswith("optuna_costbo.") and not m.startswith("optuna_costbo._numerics"))
        }
        assert not bad, f"{name} imports {sorted(bad)}"


def test_the_ledger_never_imports_the_pipeline() -> None:
    for name, path in _modules().items():
        if name.startswith("optuna_costbo._ledger"):
            bad = {m for m in _imports(path) if m.startswith("optuna_costbo._sampler")}
            bad |= {m for m in _imports(path) if m == "optuna_costbo.sampler"}
            assert not bad, f"{name} imports {sorted(bad)}"


def test_optunas_private_api_is_used_in_one_module() -> None:
    private = re.compile(
        r"optuna\.\w+\._\w+|_thread_local|\._contains\(|_INDEPENDENT_SAMPLING|storages\._"
    )
    for name, path in _modules().items():
        if name == "optuna_costbo._optuna_compat":
            continue
        code = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")
        )
        found = private.findall(code)
        assert not found, f"{name} uses Optuna's private API: {found}"


@pytest.mark.parametrize("name", sorted(_modules()))
def test_no_module_is_longer_than_about_450_lines(name: str) -> None:
    lines = len(_modules()[name].read_text().splitlines())
    assert lines <= MAX_LINES, f"{name}: {lines} lines"


def test_the_package_face_is_small_and_the_sampler_imports_from_a_handful_of_places() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 10, top
    places = {
        m
        for m in _imports(PACKAGE / "sampler.py")
        if m.startswith("optuna_costbo.") and m.count(".") == 1
    }
    assert len(places) <= 7, sorted(places)
