"""The options tables of README.md and the OptunaHub README against the sampler's signature.

Each table (``| option | default | meaning |``) must list exactly the constructor's parameters,
in its order, each default a Python literal equal to the signature's (``(required)`` for one
without a default): a parameter added, removed or given another default fails here until both
documents say so. The OptunaHub README's APIs section writes out the signature of each name
the hub module exports; each must be ``inspect.signature``'s (names, order, kinds, defaults
and annotations).
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
import re

import pytest

import optuna_costbo
from optuna_costbo import CostRolloutSampler


REPO = Path(__file__).resolve().parents[2]
HUB = REPO / "package" / "samplers" / "cost_rollout"
DOCUMENTS = ["README.md", "package/samplers/cost_rollout/README.md"]
MAX_PARAMETERS = 12
REQUIRED = "(required)"


def options_table(text: str) -> list[tuple[str, object]]:
    """The (option, default) rows of the first ``| option | default | meaning |`` table, each
    default read as a Python literal (``"(required)"`` kept as text)."""
    lines = text.splitlines()
    header = next(
        i for i, line in enumerate(lines) if re.match(r"\|\s*option\s*\|\s*default\s*\|", line)
    )
    rows = []
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        default = cells[1].strip("`")
        rows.append((cells[0].strip("`"), default if default == REQUIRED else _literal(default)))
    return rows


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return f"<not a literal: {text}>"


def signature_table() -> list[tuple[str, object]]:
    out: list[tuple[str, object]] = []
    for name, p in inspect.signature(CostRolloutSampler).parameters.items():
        out.append((name, REQUIRED if p.default is p.empty else p.default))
    return out


@pytest.mark.parametrize("document", DOCUMENTS)
def test_the_options_table_is_the_signature(document: str) -> None:
    table = options_table((REPO / document).read_text())
    assert table == signature_table()


def test_the_constructor_stays_small() -> None:
    assert len(inspect.signature(CostRolloutSampler).parameters) <= MAX_PARAMETERS


def test_a_table_that_drifts_is_caught() -> None:
    table = "| option | default | meaning |\n|---|---|---|\n| `budget` | (required) | x |\n"
    assert options_table(table) == [("budget", "(required)")]
    assert options_table(table) != signature_table()  # the other parameters are missing
    wrong = table.replace("(required)", "`1.0`")
    assert options_table(wrong) == [("budget", 1.0)]  # a default where there is none
    assert options_table(table.replace("(required)", "`2 x (d + 1)`"))[0][1] != 2


Parameter = tuple[str, str, object, str]  # name, kind, default (or REQUIRED), annotation


def _annotation(text: str | None) -> str:
    """An annotation as written in code, dotted names by their last part (``optuna.Trial``
    reads ``Trial``); ``""`` for none."""
    if text is None:
        return ""
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", ast.unparse(ast.parse(text, mode="eval")))


def written_signature(call: str) -> list[Parameter]:
    """The parameters of a signature written as ``name(a: int, *, b: str = "x")``."""
    params = call[call.index("(") :]
    function = ast.parse(f"def f{params}: pass").body[0]
    assert isinstance(function, ast.FunctionDef)
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [REQUIRED] * (len(positional) - len(args.defaults)) + [
        _literal(ast.unparse(d)) for d in args.defaults
    ]
    out: list[Parameter] = []
    for arg, default in zip(positional, defaults, strict=True):
        kind = "POSITIONAL_ONLY" if arg in args.posonlyargs else "POSITIONAL_OR_KEYWORD"
        annotation = ast.unparse(arg.annotation) if arg.annotation else None
        out.append((arg.arg, kind, default, _annotation(annotation)))
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
        default = REQUIRED if kw_default is None else _literal(ast.unparse(kw_default))
        annotation = ast.unparse(arg.annotation) if arg.annotation else None
        out.append((arg.arg, "KEYWORD_ONLY", default, _annotation(annotation)))
    return out


def code_signature(obj: object) -> list[Parameter]:
    out: list[Parameter] = []
    for name, p in inspect.signature(obj).parameters.items():  # type: ignore[arg-type]
        default = REQUIRED if p.default is p.empty else p.default
        annotation = None if p.annotation is p.empty else str(p.annotation)
        out.append((name, p.kind.name, default, _annotation(annotation)))
    return out


def hub_api_signatures() -> dict[str, str]:
    """The ``- `name(...)`: ...`` bullets of the OptunaHub README's APIs section, by name."""
    text = (HUB / "README.md").read_text()
    section = text[text.index("## APIs") : text.index("\n## ", text.index("## APIs") + 1)]
    bullets = re.findall(r"^- `((\w+)\(.*?\))`", section, flags=re.MULTILINE)
    return {name: call for call, name in bullets}


def _hub_exports() -> list[str]:
    module = ast.parse((HUB / "__init__.py").read_text())
    for node in module.body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            return sorted(ast.literal_eval(node.value))
    raise AssertionError("the OptunaHub module defines no __all__")


def test_the_hub_readme_writes_the_signature_of_each_export() -> None:
    written = hub_api_signatures()
    assert sorted(written) == _hub_exports()
    for name, call in written.items():
        assert written_signature(call) == code_signature(getattr(optuna_costbo, name)), name


def test_a_written_signature_that_drifts_is_caught() -> None:
    def f(a: int, *, b: str | None = "x", c: optuna_costbo.Ledger | None = None) -> None: ...

    assert written_signature('f(a: int, *, b: str | None = "x", c: Ledger | None = None)') == (
        code_signature(f)
    )
    for drift in (
        'f(a: int, *, b: str | None = "y", c: Ledger | None = None)',  # another default
        'f(a: int, *, b: str = "x", c: Ledger | None = None)',  # another annotation
        'f(a: int, b: str | None = "x", *, c: Ledger | None = None)',  # another kind
        'f(a: int, *, b: str | None = "x")',  # a parameter missing
        'f(a, *, b: str | None = "x", c: Ledger | None = None)',  # an annotation missing
    ):
        assert written_signature(drift) != code_signature(f), drift
