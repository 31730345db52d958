"""The model's own tree walk visits exactly what libcst's visitor visits, in the same order."""
from __future__ import annotations

import libcst as cst
import pytest

from conftest import CORPUS, FIXTURES, ROOT, nodes_and_parents
from torchlint.model.walk import children, walk

SOURCES = sorted([*FIXTURES.glob("*/*.py"), *CORPUS.glob("*/*.py"), *(ROOT / "src").rglob("*.py")])
# Everything but layout: the walk skips whitespace, comments and punctuation.
_LAYOUT = (cst.BaseParenthesizableWhitespace, cst.EmptyLine, cst.TrailingWhitespace, cst.Newline,
           cst.Comment, cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
           cst.LeftCurlyBrace, cst.RightCurlyBrace, cst.Comma, cst.Semicolon, cst.AssignEqual,
           cst.Colon, cst.Dot, cst.Asynchronous, cst.ImportStar, cst.BaseBinaryOp, cst.BaseBooleanOp,
           cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp, cst.AssignEqual, cst.ParenthesizedWhitespace,
           cst.SimpleWhitespace)


class _Recorder(cst.CSTVisitor):
    def __init__(self):
        super().__init__()
        self.events = []

    def on_visit(self, node):
        if not isinstance(node, _LAYOUT):
            self.events.append(("enter", id(node)))
        return True

    def on_leave(self, node):
        if not isinstance(node, _LAYOUT):
            self.events.append(("leave", id(node)))


def _walked(module):
    events = []
    walk(module,
         lambda n: events.append(("enter", id(n))) if not isinstance(n, _LAYOUT) else None,
         lambda n: events.append(("leave", id(n))) if not isinstance(n, _LAYOUT) else None)
    return events


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_walk_matches_libcst_visitor(path):
    module = cst.parse_module(path.read_text(encoding="utf-8"))
    recorder = _Recorder()
    module.visit(recorder)
    assert _walked(module) == recorder.events


def test_walk_covers_syntax_whose_fields_are_out_of_source_order():
    source = (
        "@deco(a)\nclass C(Base, metaclass=M):\n    @staticmethod\n    def f(x, /, y=1, *a, k=2, **kw) -> R:\n"
        "        return b if t else c\n"
        "try:\n    pass\nexcept E as e:\n    g(e)\n"
    )
    module = cst.parse_module(source)
    recorder = _Recorder()
    module.visit(recorder)
    assert _walked(module) == recorder.events


def test_children_are_the_non_layout_children_in_order():
    call = cst.parse_expression("f(a, b=c)")
    assert [type(n).__name__ for n in children(call)] == ["Name", "Arg", "Arg"]


def test_parented_walk_gives_every_node_its_parent_and_calls_only_where_asked():
    from torchlint.model.walk import walk_parented

    module = cst.parse_module(
        "import torch\nif False:\n    x = f(a.b)\nelse:\n    y = [g(c) for c in d]\n"
    )
    entered, parents = nodes_and_parents(module)
    orelse = module.body[1].orelse
    called, left, found = [], [], {}
    walk_parented(module, called.append, left.append, found, frozenset((cst.Name, cst.Else)), {id(orelse)})
    assert found == parents  # every node but the module, quiet or not
    assert called == [n for n in entered if type(n) is not cst.Name and type(n) is not cst.Else or n is orelse]
    assert orelse in called and any(type(n) is cst.Name for n in entered)
    assert sorted(map(id, left)) == sorted(map(id, called))


def test_the_parented_walk_passes_by_only_quiet_nodes_with_nothing_under_them():
    """``walk_parented`` makes no call for a quiet type it reads as barren (no syntax node
    under it): on every fixture and corpus file, no node of such a type holds one; and a
    watched node of a barren quiet type is still entered."""
    from torchlint.model.builder import _QUIET
    from torchlint.model.walk import _barren, walk_parented

    barren = {kind for kind in _QUIET if _barren(kind)}
    assert {cst.Name, cst.Integer, cst.Add} <= barren and cst.Attribute not in barren
    seen = set()
    for path in SOURCES:
        nodes, _ = nodes_and_parents(cst.parse_module(path.read_text(encoding="utf-8")))
        for node in nodes:
            if type(node) in barren:
                seen.add(type(node))
                assert children(node) == [], (path, node)
    assert {cst.Name, cst.Integer, cst.SimpleString, cst.Float} <= seen
    module = cst.parse_module("x = a + 1\n")
    name = module.body[0].body[0].value.left
    called, found = [], {}
    walk_parented(module, called.append, lambda n: None, found, frozenset((cst.Name, cst.Integer)), {id(name)})
    assert name in called and not any(type(n) is cst.Integer for n in called)


@pytest.mark.parametrize("path", SOURCES[::8], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_models_parents_are_the_trees(path):
    from torchlint.model import FileModel

    module = cst.parse_module(path.read_text(encoding="utf-8"))
    assert FileModel(module, str(path)).parents == nodes_and_parents(module)[1]
