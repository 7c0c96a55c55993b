"""The run's controller starts and stops every target (conformance.engine.distribute.XdistHooks)."""

import pytest

from conformance.engine.distribute import XdistHooks


class _Stopping:
    def __init__(self, name: str, raises: bool = False) -> None:
        self.name, self.raises, self.stopped = name, raises, None

    def stop(self, now: bool) -> None:
        self.stopped = now
        if self.raises:
            raise RuntimeError(f"{self.name}: the server would not stop (planted)")


def test_a_stop_that_raises_leaves_no_other_target_running_and_is_said(tmp_path):
    hooks = XdistHooks(tmp_path, None)
    first, broken, last = _Stopping("a"), _Stopping("b", raises=True), _Stopping("c")
    hooks.started, hooks.folder = [first, broken, last], str(tmp_path / "targets")
    (tmp_path / "targets").mkdir()
    with pytest.raises(RuntimeError, match="b: the server would not stop"):
        hooks.pytest_unconfigure(None)  # type: ignore[arg-type]
    assert (first.stopped, broken.stopped, last.stopped) == (False, False, False)  # each stopped, not at once
    assert not (tmp_path / "targets").exists()  # the targets' folder goes all the same
