"""The attacker probe (``tests/hostile_inputs.py``, issue 33) in its fast form, in this process.

Every fast case of the probe runs once (``main()`` with stdout / stderr captured at the file
descriptors, outputs asked for in a fresh folder, no ``--quiet``); the test then asserts, for
every case, what the probe's full form prints as its counts: no traceback, no hang, exit 2 with
exactly one ``error:`` line for a refusal, no output left by a failed run, no payload run. Each
case issue 33 lists by its exact input is a test of its own, with what its one sentence must say.
The full form (every case as a real process, the slow ones too): ``python -m tests.hostile_inputs --full``.
"""

from __future__ import annotations

import pytest

from tests.hostile_inputs import KINDS, probe_cases, run_case

pytestmark = pytest.mark.slow  # one module fixture runs every fast case (about 17 s of CPU): make test, not make check

LISTED = {
    # the fabrication audit's image folders
    "fabrication: PNG folder, corrupt PNG": "Image 'i3.png' is not a readable PNG",
    "fabrication: PNG folder, text named .png": "it is not a PNG image",
    "fabrication: PNG folder, bad IDAT": "Image 'i3.png' is not a readable PNG",
    "fabrication: PNG folder, 900-megapixel bomb": "30,000x30,000 pixels",
    "fabrication: PNG folder, folder named like an image": "is a folder, not a PNG file",
    "fabrication: PNG folder, short labels.csv row": "has 2 fields but the header has 3",
    "fabrication: PNG folder, Latin-1 labels.csv": "is not UTF-8 text (byte 0xe9",
    # trusted TorchScript models
    "fabrication: trusted TorchScript, frozen": "",
    "fabrication: trusted TorchScript, raises": "boom from the model's own code",
    "fabrication: trusted TorchScript, tuple": "returns a tuple, not a tensor",
    "fabrication: trusted TorchScript, dict": "returns a dict, not a tensor",
    "fabrication: trusted TorchScript, 1-D": "outputs shape (2,) for 2 images",
    "fabrication: trusted TorchScript, NaN": "NaN or infinite scores",
    "fabrication: trusted TorchScript, integer": "int64 values, not class scores",
    # LiRA, the cluster, the refusals that printed more than one line
    "lira: +-inf in a feature": "holds infinite values (2, first at row 3)",
    "tabular: --scheduler where a silent server listens": "it is not a Dask scheduler",
    "tabular: --scheduler where a web server answers HTTP": "it is not a Dask scheduler (it sent nothing",
    "tabular: --scheduler inproc://": "inproc://x names a scheduler inside another Python process",
    "tabular: an unterminated CSV quote": "does not match the header",
    "scores: --json /dev/full": "Writing --json /dev/full failed (No space left on device)",
    "scores: --html /dev/full after --json": "Writing --html /dev/full failed",
    "scores: --records /dev/full": "Writing --records /dev/full failed",
    "scores: --json into /proc": "Writing --json /proc/self/status failed",
    "scores: --json a FIFO nobody reads": "nothing read from this pipe",
    "tabular: --pdf without Chromium": "PDF export needs a local Chromium",
    "scores: stdout is /dev/full": "could not be written to standard output",
    # the new surfaces
    "tabular: --groups a missing column": "--groups: 'no_such_column' is not a compared column",
    "lira: --groups a missing column": "--groups: 'nope' is not a feature column",
    "lira: --scores-out not Parquet": "must end in .parquet",
    "tabular: --fail-on a bad level": "invalid choice: 'medium'",
    "selfcheck: --json a folder": "is a folder",
    "model: ONNX custom domain": "uses custom operators ('com.example.native')",
    "model: ONNX external data outside": "in an external file ('../../../etc/passwd')",
    "model: ONNX huge declared initializer": "(10,000,000,000 values) but stores 4",
    "model: ONNX truncated protobuf": "does not parse",
    "model: ONNX zip archive": "a zip archive but not a skops file",
    "model: ONNX pickle renamed": "is a Python pickle",
    "model: ONNX infinite loop": "did not finish scoring 64 records within 1 s",
    "model: ONNX memory bomb": "(1,000,000,000,000 values, over the 268,435,456 accepted)",
    "model: skops untrusted type": "outside skops' trusted set and this audit's vetted list, so it is not loaded: os.system",
    "model: skops zip bomb": "would inflate to 2,848 MB",
    "model: skops ../ member name": "a path out of the archive",
    "model: safetensors huge shapes": "not a valid safetensors file",
    "model: safetensors offsets past the end": "not a valid safetensors file",
    "model: safetensors absurd header length": "",
    "model: safetensors non-UTF-8 header": "",
    "model: npz object arrays": "never loaded",
    "model: npz zip bomb": "at most 160,000,000",
    "dp-audit-model: canaries missing label column": "The label column 'y' (--target) is not in canary file",
    "dp-audit-model: canaries inclusion 0/1/2": "must be 0 (left out) or 1 (included), but row 4",
    "dp-audit-model: canaries all included": "is marked left out (0)",
    "dp-audit-model: canaries none included": "is marked included (1)",
    "dp-audit-model: canaries duplicated canaries": "lists the same canary more than once",
    "model: ONNX schema mismatch": "takes 5 features but the table has 3",
    "model: ONNX NaN outputs": "NaN or infinite values",
    "model: ONNX regressor": "has 1 classes but the label column has 2",
    # a database as a table input (beyond the list)
    "scores: a database query that never ends": "within 1 s, so the query was stopped",
    "scores: a database query that writes": "must be a read-only SELECT",
    "scores: a database table name that injects": "no such table",
    "scores: an unreachable PostgreSQL server": "postgresql://u@127.0.0.1:1/db",
}


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """Every fast case run once, by name (the ONNX and database time limits, the FIFO and handshake waits shortened)."""
    import audit_core.common.cluster as cluster
    import audit_core.common.database as database
    import audit_core.common.outputs as outputs
    import audit_core.model.loading as loading

    folder = tmp_path_factory.mktemp("probe")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loading, "MODEL_FIRST_SECONDS", 1.0)
        mp.setattr(outputs, "FIFO_WAIT_S", 1.0)
        mp.setattr(cluster, "_HANDSHAKE_TIMEOUT_S", 0.5)
        mp.setattr(database, "DATABASE_SECONDS", 1.0)
        return {c.name: run_case(c, folder, in_process=True) for c in probe_cases(folder) if c.fast}


@pytest.mark.parametrize("name", sorted(LISTED))
def test_each_listed_case_is_one_sentence(name, verdicts):
    verdict = verdicts[name]
    assert not verdict.problems, verdict.line()
    if "frozen" in name:  # a valid trusted model without parameters: it runs
        assert verdict.status == 0, verdict.line()
        return
    assert verdict.status == 2, verdict.line()
    assert LISTED[name] in verdict.stderr, verdict.line()


def test_the_probe_counts_zero_of_every_kind(verdicts):
    """What ``python -m tests.hostile_inputs --fast`` prints: over every subcommand, 0 of each kind of failure."""
    found = {kind: [v.line() for v in verdicts.values() if kind in v.problems] for kind in KINDS}
    assert {k: len(v) for k, v in found.items()} == dict.fromkeys(KINDS, 0), found
    from audit_core.registry import REGISTRY, TOOLS

    assert {v.case.argv[0] for v in verdicts.values()} == {*REGISTRY, *TOOLS}  # every subcommand is attacked
    runs = [v for v in verdicts.values() if v.status == 0]
    assert {v.case.argv[0] for v in runs} >= {"scores", "model", "dp-audit-model", "fabrication"}
