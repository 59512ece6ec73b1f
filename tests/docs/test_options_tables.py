"""The options tables of README.md and the OptunaHub README against the sampler's signature.

Each table (``| option | default | meaning |``) must list exactly the constructor's parameters,
in its order, each default as the Python repr of the signature's (``(required)`` for one
without a default): a parameter added, removed or given another default fails here until both
documents say so.
"""

from __future__ import annotations

import inspect
from pathlib import Path
import re

import pytest

from optuna_costbo import CostRolloutSampler


REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md", "package/samplers/cost_rollout/README.md"]
MAX_PARAMETERS = 12


def options_table(text: str) -> list[tuple[str, str]]:
    """The (option, default) rows of the first ``| option | default | meaning |`` table."""
    lines = text.splitlines()
    header = next(
        i for i, line in enumerate(lines) if re.match(r"\|\s*option\s*\|\s*default\s*\|", line)
    )
    rows = []
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append((cells[0].strip("`"), cells[1].strip("`")))
    return rows


def signature_table() -> list[tuple[str, str]]:
    out = []
    for name, p in inspect.signature(CostRolloutSampler).parameters.items():
        out.append((name, "(required)" if p.default is p.empty else repr(p.default)))
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
    wrong = signature_table()
    wrong[1] = (wrong[1][0], "'eipu'")
    assert wrong != signature_table()
