"""TorchFix's codes and the torchlint codes that answer them: what TL011 rewrites in ``# noqa:`` lists.

TorchFix (pytorch-labs/torchfix, archived) reported ``TORnnn`` codes; a project that
silenced one with ``# noqa: TOR102`` keeps that silence under torchlint once the comment
names the rule that finds the same thing. docs/torchfix.md explains each pairing, and
``tests/test_torchfix_noqa.py`` keeps its table and this one equal.
"""
from __future__ import annotations

from typing import Dict, Tuple

# TorchFix code -> the torchlint codes that report the same lines (empty: none does).
ANSWERS: Dict[str, Tuple[str, ...]] = {
    "TOR001": ("TL701",),  # a removed function called
    "TOR002": ("TL506",),  # x.require_grad = ...
    "TOR003": ("TL501",),  # checkpoint without use_reentrant
    "TOR004": ("TL701",),  # a removed function imported: torchlint reports its call
    "TOR101": ("TL702",),  # a deprecated function called
    "TOR102": ("TL507",),  # torch.load without weights_only
    "TOR103": ("TL702",),  # a deprecated function imported: torchlint reports its call
    "TOR104": ("TL703",),  # a non-public function with a public twin
    "TOR105": ("TL703",),  # its import: torchlint reports the call
    "TOR106": ("TL704",),  # torch.log(1 + x)
    "TOR107": ("TL704",),  # torch.exp(x) - 1
    "TOR108": ("TL706",),  # log(sum(exp(x)))
    "TOR201": ("TL705",),  # torchvision's pretrained=
    "TOR202": ("TL707",),  # torchvision's v2.ToTensor
    "TOR203": (),  # import style of torchvision.models: no torchlint rule
    "TOR401": ("TL601",),  # DataLoader without num_workers
    "TOR402": ("TL602",),  # zero_grad(set_to_none=False)
    "TOR901": (),  # torch.library.Library in PyTorch's own tests: no torchlint rule
}
