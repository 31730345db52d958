"""libcst's node classes, built with less work while torchlint parses.

libcst builds each node of a parse by calling its class, a frozen dataclass with
slots. Two parts of that call re-do what needs no doing here:

- Validation. Each node checks itself (``CSTNode.__post_init__``), which for the
  parser's own output re-proves what the grammar already did: a sixth to a fifth
  of the parse. While this thread is inside ``parsing()`` it is skipped; nodes
  built anywhere else (a fix's edits, another library in the process, another
  thread) are checked as before.
- Field setting. A frozen dataclass's ``__init__`` sets each field through
  ``object.__setattr__(self, "name", value)``: a lookup of the name on the class
  per field per node. The ``__init__`` installed here has the same parameters,
  defaults and default factories (read from the class's dataclass fields), and
  calls each field's slot setter directly: about a tenth of the parse.

Both are installed once, on the first parse, for the whole process (a swap around
each parse would leave what other threads build meanwhile half done; at import,
writing the ``__init__``s would cost every command 10 ms, those that parse nothing
too), and only where a class is as described: a live dataclass of libcst whose
fields are all plain ``__init__`` parameters held in slots and which does not add
its own ``__post_init__``. Any other class keeps its own ``__init__``. ``as_shipped()``
puts libcst's own back for a while, for a benchmark whose reference is libcst's
parse as shipped.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import threading
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple

from libcst import CSTNode


class _Parsing(threading.local):
    depth = 0  # > 0 while this thread's parser builds nodes


_PARSING = _Parsing()
_LIBCST_POST_INIT = CSTNode.__post_init__


@contextlib.contextmanager
def parsing() -> Iterator[None]:
    """While in it, this thread's new nodes are not validated (the parser's are proven);
    the first one installs both changes (``installed``)."""
    if not _INSTALLED.is_set():
        installed()
    _PARSING.depth += 1
    try:
        yield
    finally:
        _PARSING.depth -= 1


def _validated_unless_parsed(node: CSTNode) -> None:
    if not _PARSING.depth:
        _LIBCST_POST_INIT(node)


# What a dataclass's own ``__init__`` takes as the default of a field with a default factory
# (private to dataclasses; a caller that read the signature, as Hypothesis's ``builds`` does,
# may pass it back to mean "the factory's value").
_FACTORY_DEFAULT = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", dataclasses.MISSING)


def _slot_setter(cls: type, name: str) -> Optional[Callable[[object, object], None]]:
    for klass in cls.__mro__:
        held = klass.__dict__.get(name)
        if held is not None:
            return held.__set__ if type(held).__name__ == "member_descriptor" else None
    return None


def _direct_init(cls: type) -> Optional[Callable[..., None]]:
    """An ``__init__`` for ``cls`` that does what its dataclass one does, its fields set
    by their slots; None where ``cls`` is not as the module's docstring says."""
    if cls.__post_init__ is not _validated_unless_parsed:  # type: ignore[attr-defined]
        return None
    names: Dict[str, object] = {"_FACTORY": _FACTORY_DEFAULT, "_PARSING": _PARSING,
                                "_validate": _LIBCST_POST_INIT}
    parameters, lines = [], []
    for number, field in enumerate(dataclasses.fields(cls)):
        setter = _slot_setter(cls, field.name)
        if setter is None or not field.init or field.kw_only is True:
            return None
        names[f"_set{number}"] = setter
        value = field.name
        if field.default is not dataclasses.MISSING:
            names[f"_default{number}"] = field.default
            parameters.append(f"{field.name}=_default{number}")
        elif field.default_factory is not dataclasses.MISSING:
            names[f"_factory{number}"] = field.default_factory
            parameters.append(f"{field.name}=_FACTORY")
            value = f"_factory{number}() if {field.name} is _FACTORY else {field.name}"
        else:
            parameters.append(field.name)
        lines.append(f"    _set{number}(self, {value})")
    text = (f"def __init__(self, {', '.join(parameters)}):\n" + "\n".join(lines)
            + "\n    if not _PARSING.depth:\n        _validate(self)\n")
    try:
        exec(text, names)  # as dataclasses writes __init__ itself
    except SyntaxError:  # a layout no dataclass of today's libcst has (a default before a required field)
        return None
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"  # type: ignore[attr-defined]
    # the signature libcst's has, annotations included: a library may read it (Hypothesis does)
    init.__annotations__ = dict(getattr(cls.__dict__.get("__init__"), "__annotations__", {}))
    return init  # type: ignore[return-value]


def _live_node_classes() -> List[type]:
    """libcst's node classes, each once: a class that ``add_slots`` rebuilt leaves its
    first version among the subclasses until it is collected."""
    found: List[type] = []
    seen: Set[type] = set()
    stack = [CSTNode]
    while stack:
        for cls in stack.pop().__subclasses__():
            if cls not in seen:
                seen.add(cls)
                found.append(cls)
                stack.append(cls)
    return [cls for cls in found if cls.__module__.startswith("libcst.")
            and getattr(sys.modules.get(cls.__module__), cls.__name__, None) is cls
            and dataclasses.is_dataclass(cls) and "__init__" in cls.__dict__]


def _install() -> List[Tuple[type, Callable[..., None]]]:
    """Installs both changes; returns each class's replaced ``__init__``."""
    CSTNode.__post_init__ = _validated_unless_parsed  # type: ignore[method-assign,assignment]
    replaced = []
    for cls in _live_node_classes():
        init = _direct_init(cls)
        if init is not None:
            replaced.append((cls, cls.__dict__["__init__"]))
            setattr(cls, "__init__", init)
    return replaced


_REPLACED: List[Tuple[type, Callable[..., None]]] = []  # (class, libcst's __init__), once installed
_INSTALLING = threading.Lock()
_INSTALLED = threading.Event()  # set once, even where no class could be given a direct __init__


def installed() -> List[Tuple[type, Callable[..., None]]]:
    """Installs both changes unless done; each class whose ``__init__`` was replaced, with
    libcst's own."""
    with _INSTALLING:
        if not _INSTALLED.is_set():
            _REPLACED.extend(_install())
            _INSTALLED.set()
    return _REPLACED


@contextlib.contextmanager
def as_shipped() -> Iterator[None]:
    """libcst's own node construction, validation included, for the block's duration:
    a benchmark's reference. Process-wide, so a parse in another thread meanwhile is
    slower, not different (both ways build the same nodes)."""
    shipped = installed()
    ours = [(cls, cls.__dict__["__init__"]) for cls, _ in shipped]
    for cls, init in shipped:
        setattr(cls, "__init__", init)
    CSTNode.__post_init__ = _LIBCST_POST_INIT  # type: ignore[method-assign]
    try:
        yield
    finally:
        CSTNode.__post_init__ = _validated_unless_parsed  # type: ignore[method-assign,assignment]
        for cls, init in ours:
            setattr(cls, "__init__", init)
