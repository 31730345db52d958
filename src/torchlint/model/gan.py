"""GAN roles: which names are the generator, the discriminator and their optimizers.

Told from names only, and conservatively: ``G``, ``netG``, ``G_AB``,
``generator``, ``gen``, ``g_model``; ``D``, ``netD``, ``D_A``,
``discriminator``, ``disc``, ``critic``, ``d_net``; optimizers whose name
carries one of those words (``optimizerD``, ``opt_g``, ``d_optimizer``).
A lowercase single letter (``g``, ``d``) alone is not enough: it is as
often a gradient or a distance.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Optional

from torchlint.model.vocab import tokens

_G_LETTER = re.compile(r"^(?:net_?)?G(?:_[A-Za-z0-9]+|[A-Z0-9])?$")
_D_LETTER = re.compile(r"^(?:net_?)?D(?:_[A-Za-z0-9]+|[A-Z0-9])?$")
_G_WORDS = frozenset(("generator", "generators", "gen"))
_D_WORDS = frozenset(("discriminator", "discriminators", "disc", "dis", "critic"))
_MODEL_WORDS = frozenset(("model", "net", "network", "module"))
_NOT_A_MODEL = frozenset(("loss", "losses", "optimizer", "optim", "opt", "scheduler", "sched", "lr", "out", "output"))
_OPTIMIZER_WORDS = frozenset(("optimizer", "optimizers", "optim", "opt", "optimiser"))


@lru_cache(maxsize=2048)
def _role_of_tokens(name: str, letter: re.Pattern, words: frozenset, short: str) -> bool:
    toks = tokens(name)
    if not toks or any(t in _NOT_A_MODEL for t in toks):
        return False
    if letter.match(name):
        return True
    if name[0].isupper():
        return False  # ``Generator(nz)`` builds one; it does not run one
    if any(t in words for t in toks):
        return True
    return short in toks and any(t in _MODEL_WORDS for t in toks)  # g_model, net_g


def is_generator_name(name: str) -> bool:
    return _role_of_tokens(name, _G_LETTER, _G_WORDS, "g")


def is_discriminator_name(name: str) -> bool:
    return _role_of_tokens(name, _D_LETTER, _D_WORDS, "d")


@lru_cache(maxsize=2048)
def optimizer_role(path: str) -> Optional[str]:
    """``"G"`` for ``optimizerG``/``opt_gen``/``self.g_optimizer``, ``"D"`` for the
    discriminator's, None when the name does not say (``optimizer``)."""
    last = path.rsplit(".", 1)[-1]
    toks = [t for t in tokens(last) if t not in _OPTIMIZER_WORDS]
    if not toks or len(toks) == len(tokens(last)):
        return None  # not an optimizer's name, or no role in it
    is_g = any(t in _G_WORDS or t in ("g", "netg") for t in toks)
    is_d = any(t in _D_WORDS or t in ("d", "netd") for t in toks)
    if is_g == is_d:
        return None
    return "G" if is_g else "D"
