"""Where torchlint's documentation lives, for reporters and the language server."""
from __future__ import annotations

HOMEPAGE = "https://github.com/torchlint/torchlint"
_RULE_DOCS = HOMEPAGE + "/blob/main/docs/rules/{code}.md"
# TL001 (unparsable file) and TL002 (a rule crashed) are explained in the README.
_NOT_RULES = HOMEPAGE + "#rules"
_NOQA_CHECK = HOMEPAGE + "/blob/main/docs/configuration.md#selectors"
_TORCHFIX = HOMEPAGE + "/blob/main/docs/torchfix.md#moving-from-torchfix"


def rule_url(code: str) -> str:
    """The docs page of a rule code, e.g. .../docs/rules/TL301.md."""
    if code in ("TL001", "TL002"):
        return _NOT_RULES
    if code == "TL010":  # unused-noqa: an engine check, explained with the selectors
        return _NOQA_CHECK
    if code == "TL011":  # torchfix-noqa: explained with the move from TorchFix
        return _TORCHFIX
    return _RULE_DOCS.format(code=code)
