"""Where an item's cases come from, behind one interface; the only module that touches
hypothesis internals.

- drawn:    hypothesis draws them (and shrinks a failure);
- planned:  another target's item of the same op, dtype and mode drew them earlier in this
            worker, and this item checks the same cases in the same order (hypothesis costs
            about as much per example as a small case's op and reference together);
- saved:    an earlier run's cases (--cases-from) or a baseline's (--baseline), never drawn;
- replayed: exactly one case (--replay).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import Phase, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.database import InMemoryExampleDatabase

from conformance.engine.judgement import ConformanceFailure
from conformance.spec.recipes import Case
from conformance.store.cases import SavedCasesError, saved_cases
from conformance.store.outputs import BaselineOutputs, OutputsError, outputs_folder, plans

PlanKey = tuple[str, ...]
Choices = tuple[Any, ...]  # the choices hypothesis made to draw one case (ints, floats, bools, bytes, strings)
HARNESS_DIR = str(Path(__file__).resolve().parents[1]) + os.sep  # the conformance package


def keep_harness_constants_out() -> None:
    """Hypothesis mixes literals of "local" modules (those outside site-packages) into what it draws.  The
    harness's own modules are local in a source checkout and not in an installed copy, so their numbers would
    make the derandomised `ci` cases depend on how conformance is installed, on which of its modules happen to
    be loaded by then, and on any edit of the harness.  Its modules are kept out of that pool (case modules,
    `test_*.py`, hypothesis leaves out itself); a user's own local code still feeds it, as hypothesis means.
    Where this hypothesis has no such pool, nothing is done."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:  # pragma: no cover - another hypothesis layout
        return
    is_local = getattr(providers, "is_local_module_file", None)
    if is_local is None or getattr(is_local, "conformance_excluded", False):
        return

    def local_but_not_the_harness(path: str) -> bool:
        return not str(path).startswith(HARNESS_DIR) and is_local(path)

    local_but_not_the_harness.conformance_excluded = True  # type: ignore[attr-defined]
    providers.is_local_module_file = local_but_not_the_harness  # type: ignore[assignment]


# An invalid input is refused whatever the image: an error mode's variant checks this many cases at most (its
# items cost the harness's bookkeeping and little op work, and a hundred refusals say no more than 25)
ERROR_MODE_EXAMPLES = 25


@contextlib.contextmanager
def fewer_examples(test: Any, most: int) -> Iterator[None]:
    """Run one item of a hypothesis test with at most `most` examples: hypothesis reads a test's settings when it
    is called, so they are swapped for the item and put back after (other items of the test keep theirs).
    Internal: `_hypothesis_internal_use_settings` is where `@settings` keeps them on the test; hypothesis has no
    public way to change one call's settings (applying `settings` again wraps the test and is an error)."""
    held = getattr(test, "_hypothesis_internal_use_settings", None)
    if held is None or held.max_examples <= most:
        yield
        return
    test._hypothesis_internal_use_settings = settings(held, max_examples=most)
    try:
        yield
    finally:
        test._hypothesis_internal_use_settings = held


def is_final_example() -> bool:
    """True while hypothesis replays the minimal failing example for its report."""
    try:
        return bool(getattr(current_build_context(), "is_final", False))
    except Exception:  # noqa: BLE001 - outside a hypothesis context
        return False


def drawn_choices() -> Choices | None:
    """The choices hypothesis made for the example being run, which draw its case again (None outside hypothesis).
    Internal: a ConjectureData's `choices` (hypothesis has no public handle on an example's choice sequence); it is
    what lets a planned case that fails on another target be shrunk by hypothesis (`starting_from`)."""
    try:
        return tuple(current_build_context().data.choices)
    except Exception:  # noqa: BLE001 - outside a hypothesis context, or another hypothesis layout
        return None


@contextlib.contextmanager
def starting_from(test: Any, choices: Choices) -> Iterator[None]:
    """Run one item's hypothesis test on the example these choices draw, and shrink it if it fails, whatever the
    profile (a random dev seed would not draw it again): the choices are put, as hypothesis' own database holds an
    example to retry, in an in-memory database it reuses first, and nothing is generated after it.  Internal: the
    choices' bytes (`hypothesis.database.choices_to_bytes`, not in its `__all__`) and the test's database key attribute
    (`_hypothesis_internal_database_key`, what hypothesis' own `find` sets), swapped for the call and put back."""
    from hypothesis.database import choices_to_bytes

    held = getattr(test, "_hypothesis_internal_use_settings", None)
    if held is None:
        yield
        return
    database, key = InMemoryExampleDatabase(), b"conformance.planned-failure"
    # the secondary corpus (key + ".secondary"): a failure in the primary one is taken as shrunk already
    database.save(key + b".secondary", choices_to_bytes(choices))
    had_key = hasattr(test, "_hypothesis_internal_database_key")
    kept_key = getattr(test, "_hypothesis_internal_database_key", None)
    test._hypothesis_internal_use_settings = settings(
        held, database=database, derandomize=False, phases=[Phase.reuse, Phase.shrink]
    )
    test._hypothesis_internal_database_key = key
    try:
        yield
    finally:
        test._hypothesis_internal_use_settings = held
        if had_key:
            test._hypothesis_internal_database_key = kept_key
        else:
            del test._hypothesis_internal_database_key


@dataclass(frozen=True)
class PlannedFailure:
    """A planned case (another target's draw) that failed on this item's target, and what draws it again in
    hypothesis, so that it can be shrunk (None: it was not drawn in this worker, e.g. a saved case)."""

    failure: ConformanceFailure  # what the planned case raised
    case: Case
    choices: Choices | None


class CaseSources:
    """The cases of each variant (module, test, dtype, mode) for this worker's items."""

    def __init__(
        self,
        *,
        replay: Case | None = None,
        saved_from: Path | None = None,
        saved: dict[PlanKey, list[Case]] | None = None,
    ) -> None:
        self.replay = replay
        self.saved_from = saved_from  # a run or baseline folder: only its cases, nothing drawn
        self._plans: dict[PlanKey, list[Case]] = dict(saved or {})
        self._strategies: dict[tuple[str, str, str], st.SearchStrategy[Case]] = {}
        self._choices: dict[str, Choices] = {}  # case key -> the choices that drew it (cases drawn in this worker)

    @property
    def kind(self) -> str:
        return "replayed" if self.replay is not None else "saved" if self.saved_from is not None else "drawn"

    def strategy(self, spec: Any, dtype: str, mode: str) -> st.SearchStrategy[Case]:
        """What the item's hypothesis test draws from (the one case under --replay); built once per op, dtype and
        mode: hypothesis validates a strategy object the first time it draws from it, on every example for a
        freshly built one."""
        if self.replay is not None:
            return st.just(self.replay)
        key = (spec.name, dtype, mode)
        found = self._strategies.get(key)
        if found is None:
            found = self._strategies[key] = spec.cases(dtype, mode)
        return found

    def planned(self, key: PlanKey) -> list[Case] | None:
        """Cases to check in order instead of drawing: saved ones, or another target's draw."""
        return None if self.replay is not None else self._plans.get(key)

    def remember(self, key: PlanKey, drawn: list[Case]) -> None:
        """An item's drawn cases (before any shrinking), for the same variant's next items."""
        if self.replay is None and drawn:
            self._plans[key] = drawn

    def note_drawn(self, case: Case, choices: Choices | None, *, also: Case | None = None) -> None:
        """The choices that drew a case (and the same case under another op's name, `also`)."""
        found = choices if choices is not None else self._choices.get(case.key)
        if found is None:
            return
        self._choices[case.key] = found
        if also is not None:
            self._choices[also.key] = found

    def choices_of(self, case: Case) -> Choices | None:
        """What draws this case again in hypothesis (None: it was not drawn in this worker, e.g. a saved case)."""
        return self._choices.get(case.key)


class CaseSourceError(ValueError):
    """Saved cases (--cases-from, --baseline) that cannot be read: a usage error, said by the plugin."""


def from_config(cfg: Any) -> tuple[CaseSources, BaselineOutputs | None]:
    """The run's case sources, and the baseline's recorded outputs under --baseline (else None)."""
    keep_harness_constants_out()
    if cfg.cases_from is not None:
        try:
            return CaseSources(saved_from=cfg.cases_from, saved=saved_cases(cfg.cases_from)), None
        except SavedCasesError as exc:
            raise CaseSourceError(f"--cases-from: {exc}") from None
    if cfg.baseline is not None:
        try:
            loaded = BaselineOutputs(outputs_folder(cfg.baseline))
            return CaseSources(saved_from=cfg.baseline, saved=plans(loaded.index)), loaded
        except OutputsError as exc:
            raise CaseSourceError(f"--baseline: {exc}") from None
    return CaseSources(replay=cfg.replay), None
