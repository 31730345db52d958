"""A long file parsed in pieces is the file parsed whole (see cst_parse.py)."""
from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import threading

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from conftest import CORPUS, FIXTURES
from torchlint import cst_nodes, cst_parse
from torchlint.engine import lint_source
from torchlint.positions import node_positions
from torchlint.model.walk import walk
from torchlint.rules import ALL_RULES

SOURCES = sorted(FIXTURES.glob("*/*.py")) + sorted(CORPUS.glob("*/*.py"))

ODD = '''import torch  # header


@decorated
@twice(1)
def f(a,
      b):
    x = 1
    # indented comment, last in the block

# a comment before the next statement
x = (1,
     2); y = 3
class A:
\tdef g(self):
\t\treturn [i for i in
\t\t\ty]
if x:
    pass
else:
    pass
# footer comment
'''


def syntax(module: cst.Module) -> list:
    nodes = []
    walk(module, nodes.append, lambda node: None)
    positions = node_positions(module, nodes[1:])
    return [(type(n).__name__, positions[id(n)]) for n in nodes[1:]]


@pytest.mark.parametrize("every", [1, 2, 5])
def test_pieces_join_into_the_whole_parse(every):
    cut_somewhere = 0
    for text in [p.read_text(encoding="utf-8") for p in SOURCES] + [ODD]:
        cuts = cst_parse.cut_lines(ast.parse(text), text, every)
        joined = cst_parse.parse_module(text, cuts)
        whole = cst.parse_module(text)
        assert joined.code == text
        assert joined.deep_equals(whole)  # whitespace and comments where a whole parse puts them
        assert syntax(joined) == syntax(whole)
        cut_somewhere += bool(cuts)
    assert cut_somewhere > 50


def test_positions_of_a_joined_module_are_libcst_positions():
    cuts = cst_parse.cut_lines(ast.parse(ODD), ODD, 1)
    joined = cst_parse.parse_module(ODD, cuts)
    nodes = []
    walk(joined, nodes.append, lambda node: None)
    whole = MetadataWrapper(joined, unsafe_skip_copy=True).resolve(PositionProvider)
    got = node_positions(joined, nodes[1:])
    assert [got[id(n)] for n in nodes[1:]] == [whole[n] for n in nodes[1:]]


def test_a_piece_that_does_not_print_as_it_reads_means_one_whole_parse():
    # libcst prints 'x = 1\n\n\t\n' without its blank line: at the end of a
    # piece that would lose a line of the file.
    text = "x = 1\n\n\t\nif a:\n    pass\n"
    joined = cst_parse.parse_module(text, [3])
    assert joined.code == text and joined.deep_equals(cst.parse_module(text))
    # cut_lines itself cuts after such an end only where the text says it reads back
    assert cst_parse.cut_lines(ast.parse(text), text, 1) == []
    plain = text.replace("\t\n", "# c\n")
    assert cst_parse.cut_lines(ast.parse(plain), plain, 1) == [3]


_LAST_STATEMENTS = [
    "x = 1", "x = 1;", "if a: b()", "def f():\n    pass", "def f(): return 1",
    "class A:\n    def g(self):\n        return 1", "if x:\n    y = 2\nelse:\n    y = 3",
    "@d\ndef f():\n    x = (1,\n         2)", "for i in r:\n    pass\n    # trailing",
    "x = [\n    1,\n]  # c", "while x:\n\n    \n    y()", 's = """\n# x\n\n"""',
    "def f():\n    if a:\n        pass\n    # c\n  # d", "class A:\n    x = 1\n\n    \n    y = 2",
]
_TAIL_LINES = ["", " ", "\t", "# c", "    # c", "\f", "  x", "\\"]


def test_an_end_read_as_plain_from_the_text_prints_as_it_reads():
    # The text-only check spares printing each piece's last statement: it may
    # only say yes where the printed check does (libcst drops a line of
    # 'x = 1\n\n\t\n' and of 'x = 1\n\n    # c\n').
    plain = 0
    for last in _LAST_STATEMENTS:
        for size in range(4):
            for tail in itertools.product(_TAIL_LINES, repeat=size):
                text = last + "\n" + "".join(line + "\n" for line in tail)
                try:
                    piece = cst_parse.parse_source(text)
                except cst.ParserSyntaxError:
                    continue
                if cst_parse._plainly_ended(text):
                    plain += 1
                    tail_printed = "".join(piece.code_for_node(n) for n in (*piece.body[-1:], *piece.footer))
                    assert text.endswith(tail_printed), text
    assert plain > 100
    assert not cst_parse._plainly_ended("x = 1\n\n\t\n") and not cst_parse._plainly_ended("x = 1\n\n    # c\n")


def test_pieces_of_simple_statements_join_a_file_of_two_space_blocks(monkeypatch):
    # A piece without an indented block guesses four spaces; the file's blocks take two.
    # So does one of compound statements on one line (a main guard at the end of a file).
    text = ("import a\nx = 1\n" * 3 + "def f():\n  return 1\n" + "y = 2\n" * 3 + "class A:\n  z = 1\n"
            + 'y = 3\nif __name__ == "__main__": main()\n')
    cuts = cst_parse.cut_lines(ast.parse(text), text, 1)
    assert cuts[-1] == 14  # the main guard is a piece of its own
    parsed = []
    monkeypatch.setattr(cst_parse, "parse_source", lambda t: parsed.append(t) or cst.parse_module(t))
    joined = cst_parse.parse_module(text, cuts)
    assert text not in parsed and len(parsed) == len(cuts) + 1  # joined, not parsed again whole
    whole = cst.parse_module(text)
    assert joined.default_indent == whole.default_indent == "  "
    assert joined.code == text and joined.deep_equals(whole)


def test_no_cut_falls_before_a_block_indented_otherwise(monkeypatch):
    text = ("def f():\n  return 1\n" + "x = 1\n" * 2 + "def g():\n    return 2\n" + "y = 1\n" * 2
            + "if a: b()\nelif c:\n  d()\n")
    cuts = cst_parse.cut_lines(ast.parse(text), text, 1)
    # not before ``x = 1`` nor ``def g``: the next block takes four spaces, ``f``'s two; before
    # each ``y = 1`` and the ``if``: the next block (the ``elif``'s) takes two
    assert cuts == [6, 7, 8]
    parsed = []
    monkeypatch.setattr(cst_parse, "parse_source", lambda t: parsed.append(t) or cst.parse_module(t))
    joined = cst_parse.parse_module(text, cuts)
    assert text not in parsed and joined.code == text and joined.deep_equals(cst.parse_module(text))


def test_cuts_never_split_a_statement():
    text = "x = (1,\n     2); y = 3\nz = 4\n" * 3
    cuts = cst_parse.cut_lines(ast.parse(text), text, 1)
    assert 1 not in cuts and cuts  # line 2 continues the statement of line 1


def test_findings_are_the_same_in_pieces(monkeypatch):
    whole = [lint_source(p.read_bytes(), str(p), ALL_RULES).diagnostics for p in SOURCES]
    monkeypatch.setattr(cst_parse, "PIECE_LINES", 2)
    pieces = [lint_source(p.read_bytes(), str(p), ALL_RULES).diagnostics for p in SOURCES]
    assert pieces == whole and sum(map(len, whole)) > 20


def test_the_quicker_parse_is_libcsts_parse_as_shipped():
    for text in [p.read_text(encoding="utf-8") for p in SOURCES] + [ODD]:
        quicker = cst_parse.parse_source(text)
        with cst_nodes.as_shipped():
            shipped = cst.parse_module(text)
        assert quicker.code == text
        assert quicker.deep_equals(shipped)


def test_direct_inits_take_what_libcsts_take():
    replaced = {cls for cls, _ in cst_nodes.installed()}
    assert {cst.Name, cst.Call, cst.SimpleWhitespace, cst.Module} <= replaced
    built = [
        lambda: cst.Name("x"),  # positional
        lambda: cst.Call(func=cst.Name("f"), args=[cst.Arg(cst.Integer("1"))]),
        lambda: cst.Attribute(value=cst.Name("a"), attr=cst.Name("b"), lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
    ]
    for build in built:
        ours = build()
        with cst_nodes.as_shipped():
            shipped = build()
        assert ours.deep_equals(shipped) and repr(ours) == repr(shipped)
    one, two = cst.Call(func=cst.Name("f")), cst.Call(func=cst.Name("g"))
    assert one.whitespace_after_func.deep_equals(cst.SimpleWhitespace(""))
    assert one.whitespace_after_func is not two.whitespace_after_func  # a default factory's, fresh each time
    assert one.lpar == () and one.lpar is two.lpar  # a plain default, shared as a dataclass shares it
    # a default read off libcst's own signature before the install (Hypothesis's ``builds`` does)
    # and passed back means the factory's value, as it does to a dataclass's __init__
    with cst_nodes.as_shipped():
        read_before = inspect.signature(cst.Call).parameters["whitespace_after_func"].default
    passed = cst.Call(func=cst.Name("f"), whitespace_after_func=read_before).whitespace_after_func
    assert passed.deep_equals(cst.SimpleWhitespace(""))
    for cls in (cst.Call, cst.Name, cst.FunctionDef, cst.Module):
        with cst_nodes.as_shipped():
            shipped_signature = inspect.signature(cls)
        assert inspect.signature(cls) == shipped_signature
    with pytest.raises(TypeError):
        cst.Call()  # func is required
    with pytest.raises(TypeError):
        cst.Name("x", wrong=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cst.Name("x").value = "y"  # type: ignore[misc]


def test_as_shipped_puts_back_ours_after():
    ours = cst.Name.__init__
    with cst_nodes.as_shipped():
        assert cst.Name.__init__ is not ours
        with pytest.raises(cst.CSTValidationError):
            cst.Name("")
    assert cst.Name.__init__ is ours


def test_nodes_built_outside_a_parse_are_validated():
    cst_parse.parse_source("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # a fix's hand-built node, after a parse
    with pytest.raises(cst.ParserSyntaxError):
        cst_parse.parse_source("def (:\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # a parse that failed does not leave validation off


def test_another_threads_nodes_are_validated_while_this_thread_parses():
    raised = []

    def build() -> None:
        try:
            cst.Name("")
        except cst.CSTValidationError:
            raised.append(True)

    with cst_nodes.parsing():  # this thread is inside a parse
        cst.Name("")  # unchecked here, as the parser's own nodes are
        other = threading.Thread(target=build)
        other.start()
        other.join()
    assert raised == [True]


def test_a_class_not_as_expected_keeps_its_own_init():
    @dataclasses.dataclass(frozen=True)
    class WithoutSlots(cst.CSTNode):  # fields in the instance's dict, no slot to set
        value: str = ""

    assert cst_nodes._direct_init(WithoutSlots) is None
    assert cst_nodes._direct_init(cst.Name) is not None


def test_the_quicker_construction_waits_for_the_first_parse():
    """Writing the ``__init__``s costs about 10 ms: a command that parses nothing (a cached
    run, an empty file) does not pay it."""
    import subprocess
    import sys

    bad = FIXTURES / "TL301_stored_loss" / "bad.py"
    code = ("import libcst, torchlint.engine as e, torchlint.cst_nodes as n\n"
            f"data = open({str(bad)!r}, 'rb').read()\n"
            "before = n._INSTALLED.is_set()\n"
            "e.lint_source(data, 'bad.py', [])\n"
            "print(before, n._INSTALLED.is_set(), len(n._REPLACED) > 100)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "False"]  # no rule: nothing parsed by libcst
    code = code.replace("'bad.py', []", "'bad.py', __import__('torchlint.rules').rules.ALL_RULES")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True"]
