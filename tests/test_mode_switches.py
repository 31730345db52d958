"""TL101 reads module-mode switches through ``model.modes`` like TL103 and TL104, so the
rules and the gates agree on what ``.eval()`` / ``.train(...)`` do."""
from __future__ import annotations

import textwrap

import pytest

from torchlint.engine import lint_source
from torchlint.rule import Rule
from torchlint.rules import RULES_BY_CODE

TL101 = RULES_BY_CODE["TL101"]

# The forward runs in a loop: a single forward outside loops is not evaluation (TL101).
RUN_AFTER = '''
import torch


def run(net, xs, flag):
    {switches}
    for x in xs:
        out = net(x)
        print(out)
'''


def tl101_lines(source: str) -> list:
    source = textwrap.dedent(source)
    return [d.line for d in lint_source(source, "m.py", [TL101]).diagnostics if d.code == "TL101"]


@pytest.mark.parametrize("switches, flagged", [
    ("net.eval()", True),
    ("net.train(False)", True),
    ("net.train(mode=False)", True),
    ("net.train(0)", True),  # nn.Module.train(0) is train(mode=False); it used to count as training
    ("net.train()", False),
    ("net.eval(); net.train()", False),  # put back in training mode
    ("net.eval(); net.train(flag)", False),  # unreadable: taken as back to training, no false alarm
    ("net.eval(); net.train(True, 1)", True),  # not nn.Module.train(mode): the model stays in eval mode
])
def test_what_counts_as_switching_to_eval(switches, flagged):
    assert bool(tl101_lines(RUN_AFTER.format(switches=switches))) is flagged


def test_self_eval_calling_the_class_own_eval_method_is_no_mode_switch():
    # Trainer.eval() is this class's own method (here it runs an evaluation), not
    # nn.Module.eval(): the forward pass after it is not evaluation code.
    source = '''
    import torch


    class Trainer:
        def eval(self):
            return self.evaluate()

        def run(self, xs):
            self.eval()
            outs = []
            for x in xs:
                out = self.model(x)
                outs.append(out)
            return outs
    '''
    # The outputs go back to the caller, who may backpropagate them: no finding
    # unless something put the model in eval mode.
    assert tl101_lines(source) == []
    assert tl101_lines(source.replace("def eval(self)", "def other(self)")) == [13]


@pytest.mark.parametrize("switches", ["net.train(0)", "net.train(mode=False)", "net.eval(); net.train(True, 1)"])
def test_the_gates_let_the_new_findings_through(switches, monkeypatch):
    source = RUN_AFTER.format(switches=switches)
    gated = tl101_lines(source)
    monkeypatch.setattr(Rule, "may_apply", classmethod(lambda cls, text: True))
    monkeypatch.setattr(TL101, "needs_tree", classmethod(lambda cls, facts: True))
    assert tl101_lines(source) == gated != []


def test_self_train_running_the_module_own_train_override_is_a_switch_back():
    # Net.train(mode) overrides nn.Module.train (to keep batch-norm frozen): self.train()
    # still puts the module back in training mode. A train(self, loader) loop does not.
    source = '''
    import torch


    class Net(torch.nn.Module):
        def train(self, mode=True):
            super().train(mode)
            self.bn.eval()
            return self

        def run(self, xs):
            self.eval()
            self.train()
            for x in xs:
                print(self(x))
    '''
    assert tl101_lines(source) == []
    loop = source.replace("def train(self, mode=True):\n            super().train(mode)", "def train(self, loader):\n            print(loader)")
    assert tl101_lines(loop) == [15]
