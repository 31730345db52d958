"""Every fixture pair: bad.py gives exactly its marked findings, good.py none.

Checked through both surfaces, the CLI and flake8, which must also agree on
every line and column.
"""
from __future__ import annotations


import pytest

from conftest import FIXTURES, cli_findings, expected, flake8_findings, strip_col
from torchlint.rules import ALL_RULES

PAIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
BAD = [p / "bad.py" for p in PAIRS]
GOOD = [p / "good.py" for p in PAIRS]


OPT_IN = {rule.code for rule in ALL_RULES if not rule.default}


def _code(pair):
    return pair.name.split("_", 1)[0]


@pytest.fixture(scope="module")
def cli():
    """Default rules on default pairs; an opt-in pair is checked with its own code selected."""
    found = cli_findings(*(p for p in PAIRS if _code(p) not in OPT_IN))
    for pair in PAIRS:
        if _code(pair) in OPT_IN:
            found.update(cli_findings("--extend-select", _code(pair), pair))
    return found


@pytest.fixture(scope="module")
def flake8():
    found = flake8_findings(*(p for p in PAIRS if _code(p) not in OPT_IN))
    for pair in PAIRS:
        if _code(pair) in OPT_IN:
            found.update(flake8_findings(pair, select=f"TL,{_code(pair)}"))
    return found


def test_every_rule_has_a_fixture_pair():
    codes = {p.name.split("_", 1)[0] for p in PAIRS}
    assert codes == {rule.code for rule in ALL_RULES}
    for pair in PAIRS:
        assert (pair / "bad.py").is_file() and (pair / "good.py").is_file()
        assert expected(pair / "bad.py"), f"{pair.name}/bad.py marks no finding"
        assert {code for _, code in expected(pair / "bad.py")} >= {pair.name.split("_")[0]}


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.parent.name)
def test_bad_is_flagged_exactly(path, cli):
    assert strip_col(cli.get(str(path), set())) == expected(path)


@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.parent.name)
def test_good_is_silent(path, cli, flake8):
    assert cli.get(str(path), set()) == set()
    assert flake8.get(str(path), set()) == set()


@pytest.mark.parametrize("path", BAD, ids=lambda p: p.parent.name)
def test_flake8_reports_the_same_positions_as_the_cli(path, cli, flake8):
    assert flake8.get(str(path)) == cli.get(str(path))


def test_tl402_finds_numpy_whichever_way_the_tensor_reaches_the_host():
    # the fixture reaches NumPy through .cpu(), as code on a GPU must; the bare spelling stays found
    from torchlint.engine import lint_source
    from torchlint.rules import RULES_BY_CODE

    loop = ("import torch\n\n\ndef fit(model, optimizer, x, y, steps, curve):\n"
            "    for _ in range(steps):\n        optimizer.zero_grad()\n"
            "        loss = torch.nn.functional.mse_loss(model(x), y)\n        loss.backward()\n"
            "        optimizer.step()\n        curve.append(loss{})\n")
    for spelling in (".numpy()", ".cpu().numpy()", '.to("cpu").numpy()'):
        found = lint_source(loop.format(spelling), "train.py", [RULES_BY_CODE["TL402"]]).diagnostics
        assert [d.code for d in found] == ["TL402"], spelling
    fixed = lint_source(loop.format(".detach().cpu().numpy()"), "train.py", [RULES_BY_CODE["TL402"]])
    assert fixed.diagnostics == []
