"""Progress of a fabrication run: every message names the step and the attack actually running, and the time left."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from audit_core.fabrication import attacks, audit
from audit_core.fabrication.bundled import load_bundled
from audit_core.fabrication.progress import plan, split, time_left_text, with_time_left
from audit_core.fabrication.setup import prepare_audit
from audit_core.fabrication.training import TrainConfig


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_plan_names_the_step_and_extrapolates_the_time_left():
    clock, seen = Clock(), []
    first, second = plan(lambda f, m: seen.append((f, m)), [("training", 1.0), ("attacking", 3.0)], what="the run",
                         clock=clock)  # fmt: skip
    clock.now += 30.0  # a one-off cost before the first report (imports, a first batch) is not the pace
    first(0.5, "epoch 1/2")
    clock.now += 2.0
    first(1.0, "epoch 2/2")  # 1/8 of the work in 2 s, 3/4 left: 12 s
    clock.now += 2.0
    second(1 / 3, "item 1")  # 3/8 in 4 s, 1/2 left: 5.3 s
    second(1.0, "item 3")
    assert [f for f, _ in seen] == pytest.approx([0.125, 0.25, 0.5, 1.0])
    assert seen[0][1] == "step 1 of 2, training: epoch 1/2 · estimating the time left in the run"
    assert seen[1][1] == "step 1 of 2, training: epoch 2/2 · about 10 s left in the run"
    assert seen[2][1] == "step 2 of 2, attacking: item 1 · about 5 s left in the run"
    assert seen[3][1].endswith("· finished")


def test_split_weights_and_labels_the_items():
    seen = []
    a, b = split(lambda f, m: seen.append((f, m)), [("MFA at 8/255", 1.0), ("I-CW at 8/255", 4.0)])
    a(1.0, "step 5/5")
    b(0.5, "step 1/2")
    assert seen == [(pytest.approx(0.2), "MFA at 8/255, step 5/5"), (pytest.approx(0.6), "I-CW at 8/255, step 1/2")]


def test_time_left_is_rounded_to_what_an_estimate_is_worth():
    assert [time_left_text(s) for s in (0.2, 7.4, 12, 88, 95, 600)] == [
        "about 1 s", "about 7 s", "about 10 s", "about 90 s", "about 2 min", "about 10 min"]  # fmt: skip
    seen = []
    report = with_time_left(lambda f, m: seen.append(m), what="training", clock=Clock())
    report(0.5, "")
    assert seen == ["estimating the time left in training"]


@pytest.mark.slow
def test_every_message_names_the_attack_running(monkeypatch):
    """The label follows the attack: while I-PGD runs it says I-PGD (it said "mfa" before), with the radius and T,
    and torch runs on one thread meanwhile, restored after."""
    data = load_bundled("digits", seed=0, n_members=40, n_non_members=40)
    setup = prepare_audit(data, train=TrainConfig(epochs=2), n_reference_models=0, seed=0,
                          device=torch.device("cpu"))  # fmt: skip
    messages: list[str] = []
    calls = []
    real = attacks.fabricate

    def spy(model, images, labels, *, progress=None, **kw):
        start = len(messages)
        out = real(model, images, labels, progress=progress, **kw)
        calls.append((kw, len(images), messages[start:], torch.get_num_threads()))
        return out

    monkeypatch.setattr(attacks, "fabricate", spy)
    threads = torch.get_num_threads()
    audit.run_fabrication(setup, epsilon=32 / 255, steps=3, epsilons=(8 / 255, 32 / 255), budgets=(2, 3),
                          compare_attacks=("mfa", "ipgd", "icw"), adaptive_betas=(0.0, 0.1), n_compare=20, seed=0,
                          progress=lambda f, m: messages.append(m))  # fmt: skip
    assert torch.get_num_threads() == threads
    names = {"mfa": "MFA", "ipgd": "I-PGD", "icw": "I-CW", "adaptive": "adaptive MFA"}
    assert {kw.get("attack", "mfa") for kw, *_ in calls} == set(names)
    for kw, n_images, during, n_threads in calls:
        assert n_threads == 1
        assert during, kw
        attack, radii = kw.get("attack", "mfa"), sorted(set(np.atleast_1d(kw["epsilon"]).tolist()))
        for m in during:
            assert re.match(r"step [1-4] of 4, ", m), m
            assert any(f"{names[attack]}{sep}" in m for sep in (" at ", f", T = {kw['steps']},")), m
            assert all(attacks.eps255(e).removesuffix("/255") in m for e in radii), m
            if n_images == 20 * len(radii) and attack != "adaptive":  # the attack comparison names T
                assert f"{names[attack]}, T = {kw['steps']}, at " in m, m
            assert " left in the attacks" in m or "estimating the time left" in m or m.endswith("finished"), m
        assert f"step {kw['steps']}/{kw['steps']}" in during[-1]
