"""What a file does when it runs as a program, and whether it seeds its random numbers.

A program is a script or a notebook: code at module level (a ``main()`` under
``if __name__ == "__main__":`` counts) that runs the file's functions. The
calls it makes are the module-level calls and, transitively, the calls of the
same-module functions and methods they reach (a method by its name:
``trainer.fit()`` reaches ``Trainer.fit``). A module of definitions that
nothing at its own level calls is a library: its caller's program decides.

Seeding is told generously, since a rule about its absence must not fire
where a seed is set in a way it cannot follow: any name in the code that
mentions a seed (``torch.manual_seed``, ``seed_everything``, ``set_seed``,
``args.seed``, ``Trainer(seed=...)``, ``init_seeds()``),
``torch.use_deterministic_algorithms`` or a cryptographically secure
generator (``secure_mode``, ``torchcsprng``: noise that must not repeat)
counts. So does a comment that mentions a seed: ``# torch.manual_seed(1)  #
reproducible``, commented out, is a choice made, not one forgotten. A call of a
function of another project module whose code does either counts too
(``function_effects.seeds``: one definition for a file and a function).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Tuple

from torchlint.model.function_effects import code_mentions_seeding, seeds
from torchlint.model.project_calls import project_callee

if TYPE_CHECKING:
    from torchlint.model.records import CallSite, Scope
    from torchlint.model import FileModel

# Calls that write a program's result to a file: a checkpoint, weights, metrics.
_SAVING_TORCH = frozenset(("torch.save",))
_SAVING_METHODS = frozenset(("save_pretrained", "save_checkpoint", "save_model", "save_state_dict"))
_SAVING_MODULES = frozenset(("numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt", "json.dump"))


def mentions_seeding(file_model: FileModel) -> bool:
    return file_model.derived(_mentions_seeding)


def _mentions_seeding(file_model: FileModel) -> bool:
    if code_mentions_seeding(file_model.module, file_model.module.code):
        return True
    callees = (project_callee(file_model, call) for call in program_calls(file_model))
    return any(callee is not None and callee.ask(seeds) for callee in callees)


def program_calls(file_model: FileModel) -> Tuple[CallSite, ...]:
    """The calls the file makes when it runs: module-level code and what it reaches here."""
    return tuple(call for call, _ in _program_runs(file_model))


def _program_runs(file_model: FileModel) -> Tuple[Tuple[CallSite, Tuple[int, ...]], ...]:
    return file_model.derived(_reach)


def _reach(file_model: FileModel) -> Tuple[Tuple[CallSite, Tuple[int, ...]], ...]:
    """Each call the program reaches, with when it runs, roughly: the source orders of the calls
    on the way to it, from the module-level call down (compared as tuples, loops aside). A
    ``save()`` defined above the training loop and called below it runs after the training; a
    ``train()`` helper defined below ``main()`` runs where ``main()`` calls it."""
    by_method: Dict[str, List[Scope]] = {}
    for (_, name), scope in file_model.methods.items():
        by_method.setdefault(name, []).append(scope)
    reached: List[Tuple[CallSite, Tuple[int, ...]]] = []
    seen: set = set()
    todo: List[Tuple[CallSite, Tuple[int, ...]]] = [
        (call, (call.order,)) for call in file_model.calls if call.scope is file_model.module_scope]
    todo.reverse()  # popped in source order: the first path to a function is the one kept
    while todo:
        call, when = todo.pop()
        reached.append((call, when))
        targets = [file_model.resolve(call)]
        if call.receiver is not None and call.method is not None:
            targets += by_method.get(call.method, [])
        for target in targets:
            if target is not None and id(target) not in seen:
                seen.add(id(target))
                inner = [(c, when + (c.order,)) for c in file_model.calls_in(target) if c.scope is target]
                todo.extend(reversed(inner))
    return tuple(reached)


def _saves(file_model: FileModel, call: CallSite) -> bool:
    return (file_model.qualify(call) in _SAVING_TORCH or file_model.names.qualify_any(call.callee) in _SAVING_MODULES
            or call.method in _SAVING_METHODS)


def saves_after_training(file_model: FileModel) -> List[CallSite]:
    """The program's calls that write a checkpoint, weights or metrics to a file once training
    has begun, in the order they run (a cache of word vectors written before is not a result)."""
    runs = _program_runs(file_model)
    started = min((when for call, when in runs if file_model.is_training_call(call)), default=None)
    if started is None:
        return []
    return [call for call, when in sorted(runs, key=lambda run: run[1])
            if when > started and _saves(file_model, call)]
