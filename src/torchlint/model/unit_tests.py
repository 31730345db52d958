"""Which files are unit tests: told by what they hold, not by their names.

Rules leave unit tests alone: a test runs a forward pass to compare outputs,
builds graphs it throws away and triggers errors on purpose. Names do not
tell tests apart: research repositories call their evaluation programs
``test_net.py`` and ``test_model.py``, and those are the code the rules are
for. A file is a unit test when it is pytest's ``conftest.py``, imports a test
framework (pytest, unittest, torch's internal test utilities), or defines test
functions that assert: one the file never calls itself (a test runner collects
it), or several (a suite the file runs from its own ``main()``). An evaluation
program calls its own ``test()``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List

import libcst as cst

from torchlint.model.vocab import TEST_FRAMEWORKS, is_pytest_conftest
from torchlint.model.walk import walk

if TYPE_CHECKING:
    from torchlint.model import FileModel, Scope

_TORCH_TEST_UTILITIES = "torch.testing._internal"


def is_unit_test_file(file_model: FileModel) -> bool:
    if is_pytest_conftest(file_model.path):
        return True
    names = file_model.names
    if names.imported_roots & TEST_FRAMEWORKS:
        return True
    if any(module.startswith(_TORCH_TEST_UTILITIES) for module, _, _ in names.origins.values()):
        return True
    tests = [scope for scope in file_model.scopes if _is_test_function(scope) and _asserts(scope)]
    # A runner collects and calls them; a script that runs a suite of its own from
    # ``main()`` (distributed tests launched as programs) is a test too.
    return len(tests) >= 2 or any(not _called(file_model, scope) for scope in tests)


def _is_test_function(scope: Scope) -> bool:
    """A ``test*`` function, or a ``test*`` method of a ``Test*`` class."""
    if scope.parent is None or not scope.parent.is_module or not scope.name.startswith("test"):
        return False
    return scope.class_name is None or "test" in scope.class_name.lower()


def _called(file_model: FileModel, scope: Scope) -> bool:
    return bool(file_model.callers.get(scope)) or _called_by_name(file_model, scope.name)


def _called_by_name(file_model: FileModel, name: str) -> bool:
    """``test(model, loader)``, ``self.test_epoch()``: the file runs this function itself."""
    return any(call.callee == name or call.method == name for call in file_model.calls)


def _asserts(scope: Scope) -> bool:
    """An ``assert`` statement, or an assertion helper (``self.assertEqual``,
    ``torch.testing.assert_close``, ``np.testing.assert_allclose``)."""
    if any((call.method or call.callee or "").startswith("assert") for call in scope.calls):
        return True
    found: List[cst.Assert] = []

    def enter(node: cst.CSTNode) -> None:
        if isinstance(node, cst.Assert):
            found.append(node)

    assert isinstance(scope.node, cst.FunctionDef)  # asked of test functions only
    walk(scope.node.body, enter, lambda node: None)
    return bool(found)
