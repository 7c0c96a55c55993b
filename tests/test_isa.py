"""CPU instruction-set paths as targets: a kernel that differs on a lower ISA is found, on its side."""

from pathlib import Path

import pytest

from conformance.devices.discovery import discover, select
from conformance.devices.isa import lower_levels
from conformance.devices.isa_target import IsaTarget
from conformance.devices.targets import TargetSelectionError

HERE = Path(__file__).parent
pytestmark = pytest.mark.skipif(not lower_levels(), reason="this cpu runs torch's lowest instruction-set level")

ISA_BUG = '''
import os
from planted_ops import *

def isa_dependent(image, params):
    """Right on the machine's best path; +0.01 where ATEN_CPU_CAPABILITY=default (a planted ISA-path bug)."""
    out = good_resize(image, params)
    return out + 0.01 if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else out

test_isa = make_spec("isa_dependent", isa_dependent, dtypes=("float32",)).test()
'''


def test_lower_levels_are_targets_selected_by_isa():
    targets = discover(0)
    isa = [t for t in targets if isinstance(t, IsaTarget)]
    assert [t.name for t in isa] == [f"cpu:{level}" for level in lower_levels()]
    assert select("isa", targets) == isa
    assert "cpu:default" in [t.name for t in select("all", targets)]
    with pytest.raises(TargetSelectionError, match="'isa'"):
        select("cpu:nonsense", targets)


def test_a_bug_on_the_default_isa_path_fails_on_that_target_only(pytester):
    pytester.makepyfile(planted_ops=(HERE / "planted_ops.py").read_text(), test_cases=ISA_BUG)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=10", "--targets=cpu,cpu:default"
    )
    failed = {line.split(" ", 2)[1] for line in result.stdout.lines if line.startswith("FAILED ")}
    assert failed == {
        "test_cases.py::test_isa[cpu:default-float32-bilinear-reference]",
        "test_cases.py::test_isa[cpu:default-float32-bilinear-cross_device]",
    }
    assert "this target is off the reference, the cpu is not" in result.stdout.str()
    # only what a worker process can show is checked there
    ids = [line for line in result.stdout.lines if "cpu:default" in line and "::" in line]
    assert not any("placement" in line or "invariants" in line for line in ids)


ABORTING = """
import os
from planted_ops import *

def aborting(image, params):
    os.abort()

test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
test_aborting = make_spec("aborting", aborting, dtypes=("float32",)).test()
"""


def _requests(folder: Path, ops: list[str]) -> list[tuple[tuple[str, int], dict]]:
    import json
    import shutil

    shutil.copy(HERE / "planted_ops.py", folder / "planted_ops.py")
    source = folder / "test_aborting_cases.py"
    source.write_text(ABORTING)
    found = []
    for n, op in enumerate(ops):
        case = {
            "op": op,
            "params": {"size": [3, 5]},
            "recipe": {
                "batch": [],
                "channels": 3,
                "content": "noise",
                "dtype": "float32",
                "height": 4,
                "layout": "contiguous",
                "seed": n,
                "width": 6,
            },
        }
        found.append(
            ((op, n), {"source": str(source), "op": op, "case": json.dumps(case), "timeout": 60.0, "sampled": None})
        )
    return found


def test_the_worker_really_runs_with_the_lower_level(tmp_path):
    from conformance.devices.isa_feed import IsaWorker

    worker = IsaWorker("default")
    try:
        answer = worker.call("bad", {"source": "", "op": "", "case": "{}", "timeout": 0, "sampled": None})
        assert answer.unavailable is None  # the handshake saw DEFAULT
        assert answer.error and "could not run the case" in answer.error  # a bad request is an error, not a crash
    finally:
        worker.close()
        worker.join()


def test_requests_are_fed_ahead_and_a_crash_costs_only_its_own_case(tmp_path):
    """Many requests in flight, answered in any order asked; the case that kills the worker gets the error
    and the worker is started again for the others."""
    from conformance.devices.isa_feed import IsaWorker

    requests = _requests(tmp_path, ["good", "good", "aborting", "good", "good"])
    worker = IsaWorker("default")
    try:
        for key, request in requests:
            worker.submit(key, request)
        answers = {key: worker.result(key) for key, _ in reversed(requests)}
        assert [a.output is not None for a in answers.values()] == [True, True, False, True, True][::-1]
        assert "worker process died while running the op" in answers[("aborting", 2)].error
    finally:
        worker.close()
        worker.join()


def test_a_shared_worker_serves_two_clients_and_its_crash_sends_them_to_their_own(tmp_path):
    """Under xdist the controller's worker serves every process; when a case kills it, each process runs what
    it had in flight again on a worker of its own, which says which case it was."""
    import os
    import subprocess
    import sys

    from conformance.devices.isa_feed import IsaWorker

    path = str(tmp_path / "default.sock")
    server = subprocess.Popen(
        [sys.executable, "-m", "conformance.devices.isa_worker", "--listen", path],
        stdin=subprocess.PIPE,
        env=dict(os.environ, ATEN_CPU_CAPABILITY="default"),
    )
    clients = [IsaWorker("default", path), IsaWorker("default", path)]
    try:
        good = _requests(tmp_path, ["good", "good"])
        for client in clients:
            answers = [client.call(key, request) for key, request in good]
            assert all(a.output is not None for a in answers)
            assert client._channel is not None and client._channel.shared
        crash = _requests(tmp_path, ["good", "aborting", "good"])
        for key, request in crash:
            clients[0].submit(key, request)
        answers = [clients[0].result(key) for key, _ in crash]
        assert [a.output is not None for a in answers] == [True, False, True]
        assert "worker process died" in answers[1].error
        assert server.wait(timeout=60) != 0  # the case killed the shared worker ...
        later = clients[1].call(("good", 9), _requests(tmp_path, ["good"])[0][1])
        assert later.output is not None and not clients[1]._channel.shared
    finally:
        for client in clients:
            client.close()
            client.join()
        if server.poll() is None:
            server.stdin.close()
            server.wait()
