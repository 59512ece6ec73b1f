"""benchmarks/harness/package_probes.py: every private name the benchmarks use resolves in the
installed package (this fails first when the package's modules move: retarget there)."""

from __future__ import annotations

import pytest

from benchmarks.harness import package_probes


@pytest.mark.parametrize("name", sorted(package_probes.NAMES))
def test_every_private_name_resolves(name: str) -> None:
    assert getattr(package_probes, name) is not None


def test_patches_are_undone() -> None:
    policy = package_probes.module("policy")
    shipped = package_probes.shipped_fit_policy()
    with package_probes.fit_policy((1, 2, 0.5, 3)):
        assert (policy.MAX_FIT_POINTS, policy.MAX_MODEL_POINTS) == (1, 3)
    assert package_probes.shipped_fit_policy() == shipped
    real = package_probes.real_propose()
    with package_probes.replace_propose(len):
        assert package_probes.module("sampler").propose is len
    assert package_probes.real_propose() is real
    assert any(
        hasattr(package_probes.module("budget"), f) for f in package_probes.LEDGER_FUNCTIONS
    )
    with pytest.raises(AttributeError, match="no attribute"):
        package_probes.__getattr__("not_a_probe")
