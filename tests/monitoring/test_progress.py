"""CostProgressBar: a tqdm bar over the cost budget, driven as an Optuna callback."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterator
import contextlib
import io
import logging
from pathlib import Path
import re
import sys

import optuna
from optuna.trial import TrialState
import pytest

from optuna_costbo import CostRolloutSampler
from optuna_costbo import progress
from optuna_costbo import report_cost
from optuna_costbo._ledger.keys import BUDGET_ATTR
from optuna_costbo._ledger.ledger import compute_ledger
from optuna_costbo.progress import CostProgressBar
from optuna_costbo.progress import hint_cost_progress_bar


optuna.logging.set_verbosity(optuna.logging.ERROR)
pytest.importorskip("tqdm")


def _final_line(output: str) -> str:
    """The last state tqdm drew (redraws are separated by carriage returns)."""
    frames = [frame.strip() for frame in output.replace("\n", "\r").split("\r")]
    return [frame for frame in frames if frame][-1]


def _frames(output: str) -> list[str]:
    """Every state written, in order (tqdm separates redraws with carriage returns)."""
    frames = [frame.strip() for frame in output.replace("\n", "\r").split("\r")]
    return [frame for frame in frames if frame]


def _screen(output: str) -> list[str]:
    """The lines a terminal shows: each carriage return rewrites its line from column 0."""
    lines = []
    for raw in output.split("\n"):
        shown = ""
        for frame in raw.split("\r"):
            shown = frame + shown[len(frame) :]
        lines.append(shown.rstrip())
    return [line for line in lines if line]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@contextlib.contextmanager
def _optuna_logs_to(stream: io.StringIO) -> Iterator[None]:
    """Optuna's INFO lines to ``stream`` through its own default handler, as in a script."""
    handler = optuna.logging._default_handler
    assert isinstance(handler, logging.StreamHandler)
    old_stream, old_level = handler.stream, optuna.logging.get_verbosity()
    handler.setStream(stream)
    optuna.logging.set_verbosity(optuna.logging.INFO)
    try:
        yield
    finally:
        handler.setStream(old_stream)
        optuna.logging.set_verbosity(old_level)


def _scripted(values: list[float], costs: list[float]) -> Callable[[optuna.Trial], float]:
    def objective(trial: optuna.Trial) -> float:
        trial.suggest_float("x", 0.0, 1.0)
        report_cost(trial, costs[trial.number])
        return values[trial.number]

    return objective


def test_bar_total_is_the_samplers_budget_and_it_closes_when_spent() -> None:
    out = io.StringIO()
    bar = CostProgressBar(file=out)
    sampler = CostRolloutSampler(budget=5.0, n_startup_trials=10, seed=0)
    study = optuna.create_study(sampler=sampler)
    study.optimize(_scripted([3.0, 2.5, 4.0, 1.25, 2.0, 0.1], [1.0] * 6), callbacks=[bar])

    assert len(study.trials) == 5  # the sampler stopped the study at the budget
    assert bar.budget == 5.0  # read from the study's cost_budget attr
    assert bar.closed
    assert bar.spent == pytest.approx(5.0) and bar.n_trials == 5 and bar.best_value == 1.25
    final = _final_line(out.getvalue())
    assert final.startswith("Cost: 100%")
    assert "5/5" in final and "best=1.25" in final and "trials=5" in final
    # It drew every trial's state on the way: 1/5 with the first value as the best.
    assert "1/5" in out.getvalue() and "best=3," in out.getvalue()


def test_bar_is_capped_at_budget_and_ignores_calls_after_closing() -> None:
    out = io.StringIO()
    bar = CostProgressBar(budget=5.0, file=out, desc="Spend")
    study = optuna.create_study(direction="maximize")  # no cost-aware sampler: no stop
    study.optimize(_scripted([1.0, 3.0, 2.0, 9.0], [2.0] * 4), n_trials=4, callbacks=[bar])

    assert len(study.trials) == 4
    assert bar.closed
    # Closed after trial 2 (6 >= 5): the 4th trial (value 9, spent 8) did not move it.
    assert bar.spent == pytest.approx(6.0) and bar.n_trials == 3 and bar.best_value == 3.0
    final = _final_line(out.getvalue())
    assert final.startswith("Spend: 100%")
    assert "5/5" in final and "best=3" in final and "trials=3" in final
    assert "best=9" not in out.getvalue()


def test_pruned_and_failed_trials_count_and_best_ignores_them() -> None:
    out = io.StringIO()
    bar = CostProgressBar(budget=10.0, file=out)

    def objective(trial: optuna.Trial) -> float:
        report_cost(trial, [1.5, 2.0, 0.5][trial.number])
        if trial.number == 1:
            raise optuna.TrialPruned()
        if trial.number == 2:
            raise RuntimeError("boom")
        return 4.0

    study = optuna.create_study()
    study.optimize(objective, n_trials=3, callbacks=[bar], catch=(RuntimeError,))
    assert [t.state for t in study.trials] == [
        TrialState.COMPLETE,
        TrialState.PRUNED,
        TrialState.FAIL,
    ]
    assert bar.spent == pytest.approx(4.0) and bar.n_trials == 3 and bar.best_value == 4.0
    assert not bar.closed
    bar.close()
    bar.close()  # idempotent
    assert bar.closed
    final = _final_line(out.getvalue())
    assert "4/10" in final and "best=4" in final and "trials=3" in final
    assert final.startswith("Cost:  40%")


def test_context_manager_closes_and_no_best_before_a_complete_trial() -> None:
    out = io.StringIO()
    study = optuna.create_study()
    study.set_user_attr(BUDGET_ATTR, 8.0)

    def objective(trial: optuna.Trial) -> float:
        report_cost(trial, 2.0)
        raise optuna.TrialPruned()

    with CostProgressBar(file=out) as bar:
        study.optimize(objective, n_trials=1, callbacks=[bar])
    assert bar.closed and bar.best_value is None
    final = _final_line(out.getvalue())
    assert "2/8" in final and "trials=1" in final and "best" not in final


def test_missing_budget_is_a_clear_error() -> None:
    study = optuna.create_study()
    with pytest.raises(ValueError, match=r"no 'cost_budget' user attr.*budget=\.\.\."):
        study.optimize(lambda t: 1.0, n_trials=1, callbacks=[CostProgressBar(file=io.StringIO())])
    with pytest.raises(ValueError, match="budget must be a positive finite number"):
        CostProgressBar(budget=0.0)


def test_missing_tqdm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(ImportError, match=r'pip install "optuna-costbo\[progress\]"'):
        CostProgressBar(budget=1.0)


# -- Optuna's log lines, the final line, units -----------------------------------------------


@pytest.mark.parametrize("stream_type", [io.StringIO, _Terminal], ids=["file", "terminal"])
def test_optuna_log_lines_print_above_the_bar_and_handlers_come_back(
    stream_type: type[io.StringIO],
) -> None:
    out = stream_type()
    root = logging.getLogger("optuna")
    handlers_before = list(root.handlers)
    bar = CostProgressBar(budget=5.0, file=out)
    with _optuna_logs_to(out):
        study = optuna.create_study()
        study.optimize(_scripted([3.0, 2.0, 4.0, 1.0], [1.0] * 4), n_trials=3, callbacks=[bar])
        assert optuna.logging._default_handler not in root.handlers  # rerouted while open
        bar.close()
        assert set(root.handlers) == set(handlers_before)
        optuna.logging.get_logger("optuna.test").info("after the bar")

    screen = _screen(out.getvalue())
    logged = [line for line in screen if "Trial " in line]
    assert len(logged) == 3
    # Each log line is a line of its own: the bar never shares a line with it.
    assert all(line.startswith("[I ") and "Cost:" not in line for line in logged)
    assert screen[-1].endswith("after the bar") and screen[-2].startswith("Cost:  60%|")
    assert "3/5 [" in screen[-2] and "trials=3" in screen[-2]


def test_each_state_is_written_once_on_a_file() -> None:
    out = io.StringIO()
    bar = CostProgressBar(file=out)
    # soft: the test is about the bar's frames, not the hard budget
    sampler = CostRolloutSampler(budget=3.0, n_startup_trials=10, seed=0, overrun_risk=None)
    with _optuna_logs_to(out):
        study = optuna.create_study(sampler=sampler)
        study.optimize(_scripted([3.0, 2.0, 4.0, 1.0], [1.0] * 4), callbacks=[bar])
    assert bar.closed
    bar_frames = [frame for frame in _frames(out.getvalue()) if frame.startswith("Cost:")]
    # One frame per trial, the final one included (tqdm's close would draw it again).
    assert [re.search(r"\| (\S+) \[", frame)[1] for frame in bar_frames] == [  # type: ignore[index]
        "1/3",
        "2/3",
        "3/3",
    ]
    assert out.getvalue().endswith("trials=3]\n")


def test_closing_by_hand_writes_no_second_final_line() -> None:
    out = io.StringIO()
    with CostProgressBar(budget=10.0, file=out) as bar:
        optuna.create_study().optimize(
            _scripted([1.0, 2.0], [1.5, 2.5]), n_trials=2, callbacks=[bar]
        )
    frames = _frames(out.getvalue())
    assert len(frames) == 2 and frames[-1].startswith("Cost:  40%") and "4/10 [" in frames[-1]
    assert out.getvalue().endswith("\n")


def test_units_seconds_when_measured_named_when_reported() -> None:
    # Measured costs (no reported cost): seconds, with a plain sampler and with ours.
    for sampler in (None, CostRolloutSampler(budget=1000.0, n_startup_trials=10, seed=0)):
        out = io.StringIO()
        bar = CostProgressBar(budget=1000.0, file=out)
        study = optuna.create_study(sampler=sampler)
        study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=2, callbacks=[bar])
        bar.close()
        assert re.search(r"\| \S+/1000 s \[", _final_line(out.getvalue()))
    # A reported cost: the unit the user names, else none (it is not seconds).
    for unit, shown in (("$", "/10 $ ["), (None, "/10 [")):
        out = io.StringIO()
        bar = CostProgressBar(budget=10.0, unit=unit, file=out)
        optuna.create_study().optimize(_scripted([1.0], [2.0]), n_trials=1, callbacks=[bar])
        bar.close()
        assert "| 2" + shown in _final_line(out.getvalue())


# -- the hint at a budget study's start ----------------------------------------------------


def _hints(caplog: pytest.LogCaptureFixture) -> list[str]:
    records = {id(r): r for r in caplog.records if r.name == "optuna.costbo.progress.hint"}
    return [r.getMessage() for r in records.values()]


@pytest.fixture
def optuna_propagates() -> Iterator[None]:
    """The package logs under Optuna's logger, which does not propagate to pytest's handler."""
    optuna.logging.enable_propagation()
    try:
        yield
    finally:
        optuna.logging.disable_propagation()


def test_a_budget_study_logs_one_hint_per_study_at_info(
    caplog: pytest.LogCaptureFixture, optuna_propagates: None
) -> None:
    caplog.set_level(logging.INFO, logger="optuna")
    study = optuna.create_study(
        study_name="hinted", sampler=CostRolloutSampler(budget=3.0, n_startup_trials=10)
    )
    study.optimize(_scripted([1.0] * 4, [1.0] * 4), n_jobs=2)
    assert len(study.trials) >= 3
    (hint,) = _hints(caplog)  # once, not once per trial or per thread
    assert "'hinted'" in hint and "budget of 3 is spent" in hint
    assert "callbacks=[CostProgressBar()]" in hint
    assert "from optuna_costbo.progress import CostProgressBar" in hint
    (record,) = [r for r in caplog.records if r.name == "optuna.costbo.progress.hint"]
    assert record.levelno == logging.INFO
    # A second optimize call of the same study: already told.
    study.optimize(_scripted([1.0] * 8, [1.0] * 8), n_trials=1)
    assert len(_hints(caplog)) == 1
    # Another study in the same process gets its own hint.
    other = optuna.create_study(sampler=CostRolloutSampler(budget=1.0, n_startup_trials=10))
    other.optimize(_scripted([1.0] * 2, [1.0] * 2))
    assert len(_hints(caplog)) == 2
    # A study run with the bar already: nothing to point at.
    with CostProgressBar(file=io.StringIO()) as bar:
        barred = optuna.create_study(sampler=CostRolloutSampler(budget=1.0, n_startup_trials=10))
        barred.optimize(_scripted([1.0] * 2, [1.0] * 2), callbacks=[bar])
    assert len(_hints(caplog)) == 2 and bar.closed
    assert not hint_cost_progress_bar(barred, 1.0)  # this study was seen


def test_no_hint_without_a_budget_and_no_stack_walking(
    caplog: pytest.LogCaptureFixture, optuna_propagates: None
) -> None:
    caplog.set_level(logging.INFO, logger="optuna")
    study = optuna.create_study()
    assert not hint_cost_progress_bar(study, float("inf"))  # a stopping rule ends it
    assert hint_cost_progress_bar(study, 2.0)
    assert not hint_cost_progress_bar(study, 2.0)
    assert len(_hints(caplog)) == 1
    # The package never inspects other threads' stacks or switches the collector off.
    package = Path(progress.__file__).parents[1]
    for path in package.rglob("*.py"):
        code = path.read_text()
        for banned in ("_current_frames", "gc.disable", "_getframe", "f_locals"):
            assert banned not in code, f"{path.name} uses {banned}"


def test_disabled_bar_leaves_optunas_logging_alone() -> None:
    out = io.StringIO()
    root = logging.getLogger("optuna")
    with _optuna_logs_to(out):
        handlers = set(root.handlers)
        bar = CostProgressBar(budget=5.0, file=out, disable=True)
        optuna.create_study().optimize(_scripted([1.0], [1.0]), n_trials=1, callbacks=[bar])
        assert set(root.handlers) == handlers
        bar.close()
    assert "Cost:" not in out.getvalue() and "Trial 0 finished" in out.getvalue()


def test_bar_shows_the_samplers_ledger_on_a_wall_clock_study() -> None:
    # Measured costs: the sampler charges its own time by default, and so does the bar (the
    # two ledgers agree); reported costs: neither does.
    for reported in (False, True):
        bar = CostProgressBar(file=io.StringIO())
        sampler = CostRolloutSampler(budget=1e6, n_startup_trials=2, seed=0)
        study = optuna.create_study(sampler=sampler)

        def objective(trial: optuna.Trial, reported: bool = reported) -> float:
            x = trial.suggest_float("x", 0.0, 1.0)
            if reported:
                report_cost(trial, 1.0)
            return (x - 0.3) ** 2

        study.optimize(objective, n_trials=5, callbacks=[bar])
        ledger = sampler.ledger(study)
        assert bar.spent == pytest.approx(ledger.spent, rel=1e-12)
        plain = compute_ledger(study.get_trials(), 1e6, "cost", False).spent
        if reported:
            assert bar.spent == pytest.approx(5.0) and plain == pytest.approx(5.0)
        else:
            assert bar.spent > plain  # the sampler's seconds are in it


def test_several_objectives_show_the_front_and_a_hypervolume_that_never_falls() -> None:
    out = io.StringIO()
    bar = CostProgressBar(budget=100.0, file=out)
    # Minimize both: (1, 1) alone; then (2, 0.5) opens both ranges; (3, 3) is dominated but
    # widens them (the reference moves out); (0.5, 2) joins the front.
    values = [(1.0, 1.0), (2.0, 0.5), (3.0, 3.0), (0.5, 2.0)]

    def objective(trial: optuna.Trial) -> tuple[float, float]:
        report_cost(trial, 1.0)
        return values[trial.number]

    study = optuna.create_study(directions=["minimize", "minimize"])
    study.optimize(objective, n_trials=4, callbacks=[bar])
    frames = _frames(out.getvalue())
    assert "front=1" in frames[0] and "hv=" not in frames[0]  # no range yet
    shown = [float(m) for f in frames for m in re.findall(r"hv=([0-9.e+-]+)", f)]
    # After 2 trials: ref = (2, 1) + 0.1 x (1, 0.5) = (2.1, 1.05); two rectangles, 1.1 x 0.05
    # and 0.1 x 0.55, overlapping in 0.1 x 0.05.
    assert shown[0] == pytest.approx(1.1 * 0.05 + 0.1 * 0.55 - 0.1 * 0.05, rel=1e-3)
    assert shown == sorted(shown) and len(set(shown)) == 3
    assert "front=3" in _final_line(out.getvalue())
