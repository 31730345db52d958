"""The codes torchlint reports that are not rules: a file unread, a rule crashed, an unused noqa.

A leaf: config, the cache and the reporters need these on every run, including a
run answered from the cache, which must not pay for importing the engine (libcst).
"""
from __future__ import annotations

PARSE_ERROR = "TL001"  # the file could not be read or parsed (like flake8's E902/E999)
INTERNAL_ERROR = "TL002"  # a rule raised; flake8 shows it, the CLI exits 2
UNUSED_NOQA = "TL010"  # opt-in: a TL code in ``# noqa:`` that suppressed nothing (ruff's RUF100)
TORCHFIX_NOQA = "TL011"  # opt-in: a TorchFix code in ``# noqa:`` that a torchlint code answers
# The engine's checks of noqa comments: opt-in codes, not rules.
NOQA_CHECKS = frozenset({UNUSED_NOQA, TORCHFIX_NOQA})

# The codes that are not rules, for reports and ``torchlint rule``: (name, one line, more).
STATUS_CODES = {
    PARSE_ERROR: (
        "unreadable-file", "the file could not be read, decoded or parsed",
        "The file was not checked: it cannot be read (permissions, not a regular file), "
        "its bytes do not decode as Python source, Python's own parser refuses it (the "
        "message, line and column are Python's), or it is a notebook that is not valid "
        "JSON. Like flake8's E902/E999. Fix the file; `ignore = [\"TL001\"]` hides these "
        "findings (an unreadable file is still noted on stderr).",
    ),
    INTERNAL_ERROR: (
        "internal-error", "a rule failed on this file; please report it",
        "A torchlint rule raised an exception on this file. The other rules' findings "
        "are kept and the CLI exits 2. This is a bug in torchlint: please report it with "
        "the file (or a piece of it that shows the failure).",
    ),
    UNUSED_NOQA: (
        "unused-noqa", "a TL code in a `# noqa:` comment suppressed nothing, or is unknown",
        "Opt-in (off by default; `extend-select = [\"TL010\"]` or `--extend-select TL010`), "
        "like ruff's RUF100. Reports each TL code listed after `# noqa:` that silenced no "
        "finding on its line (for instance once the code was fixed, or the rule is not "
        "enabled for the file), and each TL code no rule has (`# noqa: TL999`). Only TL "
        "codes are judged: other tools' codes in the same comment and a bare `# noqa` are "
        "left alone, and so is a code that names TL010 itself (`# noqa: TL301,TL010` keeps "
        "a deliberate one quiet). Safe fix (`--fix`): the unused codes are dropped from the "
        "comment, and the comment goes when nothing else is left in it.",
    ),
    TORCHFIX_NOQA: (
        "torchfix-noqa", "a `# noqa:` comment names a TorchFix code that a torchlint code answers",
        "Opt-in (`--extend-select TL011`), for projects moving from TorchFix (archived). Reports "
        "each TorchFix code in a `# noqa:` list that a torchlint rule answers (`# noqa: TOR102` on "
        "a `torch.load` line: TL507 finds the same), with a safe fix that writes the torchlint code "
        "in its place, keeping the others (`# noqa: TOR102, E501` becomes `# noqa: TL507, E501`). "
        "`torchlint check --select TL011 --fix .` rewrites a whole project's comments and changes "
        "nothing else; running it again changes nothing. TorchFix codes no rule answers (TOR203, "
        "TOR901) are left as they are. The pairs are in docs/torchfix.md.",
    ),
}
