"""The base every rule module builds on: metadata, docs and a ``check``."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Iterator, Optional, Tuple

import libcst as cst

from torchlint.diagnostic import Applicability
from torchlint.needs import Need
from torchlint.text_gate import compile_gate, gate_matches

if TYPE_CHECKING:
    from torchlint.tree_gate import TreeIndex
    from torchlint.model import FileModel


@dataclass(frozen=True)
class Fix:
    """How to repair one finding: replace nodes of the parsed module.

    ``edits`` pairs a node of the module the rule was given with its
    replacement (``cst.RemoveFromParent()`` deletes a statement or argument).
    ``imports`` names modules the new code uses (``"torch"``); the fixer adds
    ``import torch`` only where the file lacks it. ``applicability`` is set per
    fix: a rule may offer a safe fix in one situation and an unsafe one in
    another; left out, it is the rule's ``fix_safety``.
    """

    description: str
    edits: Tuple[Tuple[cst.CSTNode, object], ...]
    imports: Tuple[str, ...] = ()
    applicability: Optional[Applicability] = None


@dataclass(frozen=True)
class Finding:
    """A rule's report, still pointing at a node; the engine turns it into a Diagnostic."""

    node: cst.CSTNode
    code: str
    message: str
    fix: Optional[Fix] = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, as in ``torchlint rule``
    message: ClassVar[str]  # one line: what is wrong and what to do
    default: ClassVar[bool] = True  # on unless the user opts out; False = opt-in
    # What the rule's docs promise of its fixes: none | safe | unsafe. A Fix that
    # does not say otherwise gets this applicability ("none" with a fix: unsafe).
    fix_safety: ClassVar[str] = "none"
    # What the rule's findings need a file to hold (``needs/``: calls, definitions, loops,
    # markers, questions of values, ``&``/``|``): both gates are computed from it, ``gate``
    # and ``needs_tree``; a rule writes neither. None: every file may hold a finding.
    needs: ClassVar[Optional[Need]] = None
    # Computed from ``needs``: regular expressions that must all match the source for the
    # rule to have anything to find. Cheap, and lets most files skip parsing entirely.
    gate: ClassVar[Tuple[str, ...]] = ()
    # Computed from ``needs``: what asking its tree question costs (``Need.question_cost``);
    # the engine asks the cheapest first.
    question_cost: ClassVar[int] = 0
    # Once some rule's question has admitted a file, the file is parsed whatever the others
    # answer, and most rules' checks cost less than their questions on the files those turn
    # down: the engine asks no more questions then, but of a rule whose check costs more
    # there (True: measured by ``bench/gates.py --costs`` on the bench tree or the training
    # corpus; bench/README.md, "Parse unvalidated, questions until a file is parsed").
    asked_when_parsed: ClassVar[bool] = False
    # A function of ``torchlint.text_checks`` asked once the regexes match: a question
    # the text alone answers exactly, so that files it turns down skip Python's parser.
    text_check: ClassVar[Optional[Callable[[str], bool]]] = None
    # True for a rule about training or evaluation code: the engine runs its ``check``
    # neither on unit tests nor on code of other frameworks (``FileModel.is_test_file``,
    # ``is_torch_code``), and drops it before libcst parses a file whose Python tree
    # already shows it is one (``TreeIndex.is_unit_test_or_other_framework``).
    torch_programs_only: ClassVar[bool] = False
    # Markdown sections: What it does / Why is this bad / Example / Use instead.
    docs: ClassVar[str] = ""
    # For a rule whose findings or advice depend on the target torch version
    # (``FileModel.target_torch_version``): a Markdown paragraph saying how, the
    # "Torch version" section of its page. Empty: the target does not change the rule.
    torch_version: ClassVar[str] = ""
    # Inline examples, as Fixit keeps them: short whole programs the rule must
    # flag (``invalid``: each expected finding marked at the end of its line with
    # ``# expect: TL301``) and tricky correct ones it must stay silent on
    # (``valid``). tests/test_rule_examples.py lints every one with all rules on.
    valid: ClassVar[Tuple[str, ...]] = ()
    invalid: ClassVar[Tuple[str, ...]] = ()

    _compiled: ClassVar[Optional[tuple]] = None

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "gate" in cls.__dict__ or "needs_tree" in cls.__dict__:
            raise TypeError(f"{cls.__name__} writes a gate: declare `needs` (torchlint.needs), from which "
                            "its gates are computed")
        needs = cls.__dict__.get("needs")
        if needs is not None:
            cls.gate = needs.text()
            cls.question_cost = needs.question_cost()

    @classmethod
    def may_apply(cls, source: str) -> bool:
        compiled = cls.__dict__.get("_compiled")
        if compiled is None:
            compiled = cls._compiled = compile_gate(cls.gate)
        return gate_matches(compiled, source, cls.text_check)

    @classmethod
    def needs_tree(cls, tree_index: TreeIndex) -> bool:
        """The second gate, asked of files that pass ``gate``: could this rule find
        anything in this stdlib ast tree (a ``tree_gate.TreeIndex``)? Only shapes the
        rule's findings require; True when unsure. Computed from ``needs`` where declared."""
        return cls.needs is None or cls.needs.found_in(tree_index)

    def check(self, file_model: FileModel) -> Iterator[Finding]:
        raise NotImplementedError

    def report(self, node: cst.CSTNode, message: Optional[str] = None, fix: Optional[Fix] = None) -> Finding:
        if fix is not None and fix.applicability is None:
            fix = dataclasses.replace(fix, applicability=self.default_applicability())
        return Finding(node, self.code, message or self.message, fix)

    @classmethod
    def default_applicability(cls) -> Applicability:
        return Applicability.SAFE if cls.fix_safety == "safe" else Applicability.UNSAFE
