"""The options tables of README.md and the OptunaHub README against the sampler's signature.

Each table (``| option | default | meaning |``) must list exactly the constructor's parameters,
in its order, each default a Python literal equal to the signature's (``(required)`` for one
without a default): a parameter added, removed or given another default fails here until both
documents say so.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
import re

import pytest

from optuna_costbo import CostRolloutSampler


REPO = Path(__file__).resolve().parents[2]
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
