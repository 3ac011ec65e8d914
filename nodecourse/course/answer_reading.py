"""Reading an answer's code as a person would, before it runs: what it reaches, and what cannot be told.

The grader reads every answer cell of a submission here, in its own process
(nothing is run). Two kinds of :class:`Finding` come out, each with its line:

- ``refused``: the answer references code its task asks the learner to write
  (the declared rule, :mod:`nodecourse.course.tasks.reach`): an import, a
  name, an attribute chain (``torchdiffeq.odeint``, ``R.heun_step``,
  ``getattr(R, "heun_step")``, ``vars(R)["heun_step"]``), directly or through
  a helper defined in another answer cell (answers share one namespace), in
  the course's library, torchdiffeq or torchdeq alike. A re-export is the
  same object (``nodecourse.fixed_point`` is ``nodecourse.deq._fixed_point.fixed_point``).
- ``review``: something the reader cannot decide, that could answer a task
  another way: ``eval``/``exec``/``compile`` (the built-ins), ``getattr`` or
  ``setattr`` with a name built at run time, code and function objects
  (``__code__``, ``__closure__``, ``types.FunctionType``), ``importlib``,
  ``sys.modules``, ``globals()``, replacing a library attribute, a library
  answer stored where the reader cannot follow it, IPython's machinery and
  shell magics, a process started from the answer.

Ordinary PyTorch is not flagged: ``model.eval()``, ``model.modules()``,
``torch.compile``, ``torch.no_grad()``, ``functools.partial`` of one's own
function, plotting; strings and comments are never read as code (only a
string given as a name to ``getattr``, ``import_module`` and the like is).

Why this module is long: it is a security boundary of the grader: the tables of names it watches, the walk
over an answer's syntax (:class:`_Reader`) and the following of helpers across cells decide together what an
answer may reach, so they stay in one file, to be reviewed as one.
"""

from __future__ import annotations

import ast
import importlib
import sys
import types
from dataclasses import dataclass
from typing import Iterable, Mapping

from nodecourse.course.tasks.reach import Reach, reach_for

REFUSED = "refused"
REVIEW = "review"

# Libraries whose objects the reach rules are about.
WATCHED = ("nodecourse", "torchdiffeq", "torchdeq")

# Modules whose use reaches the interpreter itself (imported or referenced, under any alias).
INTERPRETER_MODULES = frozenset(
    (
        "importlib",
        "imp",
        "pkgutil",
        "runpy",
        "ctypes",
        "gc",
        "builtins",
        "marshal",
        "inspect",
        "subprocess",
        "code",
        "codeop",
        "multiprocessing",
        "zipimport",
        "IPython",
        "ipykernel",
    )
)

# Attribute or function names that reach code objects, frames, the import system or the kernel,
# wherever they appear (an attribute, a name, a definition, an import).
INTERPRETER_NAMES = frozenset(
    (
        "get_ipython",
        "kernel_guard",
        "__code__",
        "__globals__",
        "__closure__",
        "__kwdefaults__",
        "__defaults__",
        "__builtins__",
        "__func__",
        "__wrapped__",
        "__dict__",
        "__getattribute__",
        "__subclasses__",
        "__import__",
        "__loader__",
        "__spec__",
        "__torch_function__",
        "__torch_dispatch__",
        "__array_ufunc__",
        "__array_function__",
        "TorchFunctionMode",
        "TorchDispatchMode",
        "set_custom_exc",
        "input_transformers_cleanup",
        "input_transformers_post",
        "ast_transformers",
        "settrace",
        "setprofile",
        "resolve_name",
        "reload",
        "FunctionType",
        "LambdaType",
        "CodeType",
        "MethodType",
        "CellType",
        "attrgetter",
        "methodcaller",
        "_refuse",
        "_refusal",
        "_truth",
    )
)

# Attributes of ``sys`` and ``os`` (and of pickling modules) that reach modules, frames or other processes.
_SYS_NAMES = frozenset(
    ("modules", "_getframe", "_current_frames", "meta_path", "path_hooks", "path_importer_cache", "addaudithook")
)
_OS_NAMES = frozenset(
    (
        *("system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp"),
        *("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe"),
        *("spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"),
    )
)
_UNPICKLE = frozenset(("loads", "load", "Unpickler"))
_PICKLERS = ("pickle", "dill", "cloudpickle", "marshal", "_pickle", "shelve", "joblib")

# Built-ins that run or look up code by a name known only at run time.
_RUNNING_BUILTINS = frozenset(("eval", "exec", "compile", "__import__", "breakpoint", "globals", "locals"))
# Dunder attributes that may not be assigned: they hide or swap what a function or object is.
_IDENTITY_DUNDERS = frozenset(("__qualname__", "__module__", "__name__", "__class__", "__call__"))

# IPython magics an answer may use: they run nothing but the code given (read as such) or set display.
_PLAIN_LINE_MAGICS = frozenset(("matplotlib", "precision", "pprint", "pinfo", "pinfo2", "who", "whos", "config"))
_TIMING_MAGICS = frozenset(("time", "timeit", "capture"))


@dataclass(frozen=True)
class AnyOf:
    """The reach of a cell the learner added: what any of the answers it can serve may not reach
    (those whose cells or checks come after it), each refusal naming the task that asks for it."""

    reaches: tuple[Reach, ...]

    def refuses(self, dotted: str) -> str:
        return next((p for p in (r.refuses(dotted) for r in self.reaches) if p), "")

    def asks_for(self, dotted: str) -> str:
        return next((r.asks for r in self.reaches if r.refuses(dotted)), "")


def _asks(reach, dotted: str) -> str:
    """What the task that refuses ``dotted`` asks the learner to write, in words."""
    return reach.asks_for(dotted) if isinstance(reach, AnyOf) else reach.asks


@dataclass(frozen=True)
class Finding:
    """One thing the reader noticed in an answer cell."""

    line: int  # 1-based, in the answer cell
    what: str  # the name as read: "eval", "__code__", "torchdiffeq.odeint"
    kind: str  # REFUSED or REVIEW
    why: str  # in words, for the instructor's review column or the learner's failure

    def text(self) -> str:
        return f"line {self.line}: {self.what} ({self.why})"


# ---------------------------------------------------------------------------
# Names: from imports and aliases to dotted paths, and the library object behind one
# ---------------------------------------------------------------------------


def _root(path: str) -> str:
    return path.split(".", 1)[0]


def _watched(path: str | None) -> bool:
    return bool(path) and _root(path) in WATCHED


_CANONICAL: dict[str, str] = {}


def _module(name: str):
    """The loaded module ``name``; the course's own modules are imported to find out (they are part of
    the grader); any other only when already loaded (nothing a learner names is imported here)."""
    module = sys.modules.get(name)
    if module is None and _root(name) == "nodecourse" and all(p.isidentifier() for p in name.split(".")):
        try:
            module = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - not a module
            module = None
    return module


def canonical(path: str) -> str:
    """The defining module and qualified name of the library object ``path`` names
    ("nodecourse.fixed_point" -> "nodecourse.deq._fixed_point.fixed_point"), followed by any attributes
    past it; ``path`` itself when it names nothing found. Names are followed as Python follows them:
    an attribute first, then a submodule."""
    if path in _CANONICAL:
        return _CANONICAL[path]
    parts = path.split(".")
    obj, i = _module(parts[0]), 1
    if obj is None:
        return path
    while i < len(parts) and not parts[i].startswith("__"):
        inner = getattr(obj, parts[i], None)
        if inner is None and isinstance(obj, types.ModuleType):
            inner = _module(".".join(parts[: i + 1]))
        if inner is None:
            break
        obj, i = inner, i + 1
    if isinstance(obj, types.ModuleType):
        head = obj.__name__
    else:
        owner, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        ok = isinstance(owner, str) and isinstance(qualname, str)
        head = f"{owner}.{qualname}" if ok else ".".join(parts[:i])
    _CANONICAL[path] = result = ".".join([head, *parts[i:]])
    return result


def _import_bindings(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(bound name, dotted path) of each name an import binds."""
    out = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            out.append((alias.asname, alias.name) if alias.asname else (_root(alias.name), _root(alias.name)))
    elif node.level == 0 and node.module:
        for alias in node.names:
            if alias.name != "*":
                out.append((alias.asname or alias.name, f"{node.module}.{alias.name}"))
    return out


def _const_str(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _name_call(node, *names: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names


class _Names:
    """Resolves expressions to dotted paths through a notebook's imports and plain aliases."""

    def __init__(self, aliases: Mapping[str, str]):
        self.aliases = dict(aliases)

    def path(self, node) -> str | None:
        """The dotted path ``node`` names (``torchdiffeq.odeint``), or None when it names no import."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.path(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Call):
            if _name_call(node, "getattr") and len(node.args) >= 2 and _const_str(node.args[1]):
                base = self.path(node.args[0])
                return f"{base}.{_const_str(node.args[1])}" if base else None
            target = self.path(node.func)
            if target in ("importlib.import_module", "builtins.__import__") or _name_call(node, "__import__"):
                return _const_str(node.args[0]) if node.args else None
            return None
        if isinstance(node, ast.Subscript) and _const_str(node.slice):
            key = _const_str(node.slice)
            if _name_call(node.value, "vars") and len(node.value.args) == 1:
                base = self.path(node.value.args[0])
                return f"{base}.{key}" if base else None
            if isinstance(node.value, ast.Attribute) and node.value.attr == "__dict__":
                base = self.path(node.value.value)
                return f"{base}.{key}" if base else None
            if self.path(node.value) == "sys.modules":
                return key
        return None


def setup_aliases(sources: Iterable[str]) -> dict[str, str]:
    """Name -> dotted path for what the notebook's own cells import (``odeint`` -> ``nodecourse.odeint``)."""
    aliases: dict[str, str] = {}
    for source in sources:
        tree = _parse(source)
        if tree is not None:
            _collect_aliases(tree, aliases)
    return aliases


def _collect_aliases(tree: ast.AST, aliases: dict[str, str]) -> None:
    names = _Names(aliases)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            aliases.update(_import_bindings(node))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            path = names.path(node.value)  # ``solve = nodecourse.odeint``: an alias as good as an import
            if path:
                aliases[node.targets[0].id] = path


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def python_text(source: str) -> str:
    """The cell as IPython runs it (magics and ``!`` lines become calls), or as it is."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - no IPython, or a cell it cannot transform: read it as written
        return source


# ---------------------------------------------------------------------------
# Reading one cell
# ---------------------------------------------------------------------------


class _Reader:
    def __init__(self, names: _Names, reach: Reach | None, elsewhere: Mapping[str, Reach]):
        self.names = names
        self.reach = reach
        self.elsewhere = elsewhere  # the other answers' reach: what this one may not hand them
        self.findings: list[Finding] = []
        self.plain_magics: set[int] = set()  # ``get_ipython`` names of magics read as plain code

    def add(self, node, what: str, kind: str, why: str, offset: int = 0) -> None:
        self.findings.append(Finding(getattr(node, "lineno", 1) + offset, what, kind, why))

    def refusal(self, path: str) -> tuple[str, str]:
        """(forbidden prefix, the path as matched) when this answer may not reach ``path``."""
        if self.reach is None or not _watched(path):
            return "", ""
        prefix = self.reach.refuses(path)
        if prefix:
            return prefix, path
        real = canonical(path)  # only when the name as written is not refused: it may import
        prefix = self.reach.refuses(real) if real != path else ""
        return (prefix, real) if prefix else ("", "")

    def forbidden_elsewhere(self, path: str) -> str:
        """An answer (id) of this exercise that may not reach ``path``, when another answer hands it on."""
        if not _watched(path):
            return ""
        for answer, reach in self.elsewhere.items():
            if reach.refuses(path):
                return answer
        for answer, reach in self.elsewhere.items():
            if reach.refuses(canonical(path)):
                return answer
        return ""

    def read(self, tree: ast.AST, offset: int = 0) -> None:
        parents: dict[int, ast.AST] = {}
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and self.magic(node) in ("run_line_magic", "run_cell_magic"):
                name = _const_str(node.args[0]) if node.args else None
                if name in _PLAIN_LINE_MAGICS or name in _TIMING_MAGICS:
                    self.plain_magics.add(id(node.func.value.func))
        for node in ast.walk(tree):
            self.visit(node, parents, offset)

    def visit(self, node, parents, offset: int) -> None:
        parent = parents.get(id(node))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.imports(node, offset)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in INTERPRETER_NAMES:
                self.add(node, node.name, REVIEW, "defines a hook into the interpreter's machinery", offset)
        elif isinstance(node, ast.Call):
            self.call(node, parent, offset)
        elif isinstance(node, ast.Name):
            called = isinstance(parent, ast.Call) and parent.func is node
            if node.id in _RUNNING_BUILTINS or node.id in ("vars", "getattr", "setattr", "delattr"):
                if not called:  # a call is read in call(); passed on, the reader cannot tell what it runs
                    self.add(node, node.id, REVIEW, "a built-in that runs or finds code, passed on", offset)
            elif node.id in INTERPRETER_NAMES and id(node) not in self.plain_magics:
                self.add(node, node.id, REVIEW, "reaches the interpreter's machinery", offset)
        elif isinstance(node, ast.Attribute):
            self.attribute(node, parent, offset)
        # A chain (name, attribute, getattr with a constant) that names a library object: read once, outermost.
        if isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) and not self.inner(node, parent):
            path = self.names.path(node)
            if path:
                self.chain(node, parent, path, offset)

    def inner(self, node, parent) -> bool:
        """Whether ``node`` is part of a longer chain that is read instead."""
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return self.names.path(parent) is not None
        if isinstance(parent, ast.Subscript) and parent.value is node:
            return self.names.path(parent) is not None
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
            return self.names.path(parent) is not None  # getattr(X, "name"): the call is the chain
        return False

    def imports(self, node, offset: int) -> None:
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        for module in modules:
            if _root(module) in INTERPRETER_MODULES:
                self.add(node, _root(module), REVIEW, "imports a module that reaches the interpreter", offset)
            if module.startswith("nodecourse.course"):
                self.add(node, "nodecourse.course", REVIEW, "imports the grader's own package", offset)
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name in INTERPRETER_NAMES or (node.module == "sys" and alias.name in _SYS_NAMES):
                    self.add(node, alias.name, REVIEW, "imports a name that reaches the interpreter", offset)
        for _, path in _import_bindings(node):
            self.library(node, path, offset)

    def call(self, node: ast.Call, parent, offset: int) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
            if name in _RUNNING_BUILTINS:
                self.add(node, name, REVIEW, "runs or looks up code the reader cannot see", offset)
            elif name in ("getattr", "setattr", "delattr", "hasattr"):
                self.dynamic_attribute(node, name, offset)
            elif name == "vars":
                # ``vars(X)["name"]`` is read as ``X.name`` (in the chain); anything else is a dictionary of names
                named = node.args and isinstance(parent, ast.Subscript) and parent.value is node
                if not (named and _const_str(parent.slice)):
                    self.add(node, "vars", REVIEW, "the attributes of an object as a dictionary", offset)
        elif self.names.path(func) == "torch.load" and any(
            k.arg == "weights_only" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
            for k in node.keywords
        ):
            self.add(node, "torch.load", REVIEW, "unpickles objects, functions included, named in bytes", offset)
        magic = self.magic(node)
        if magic is not None:
            self.magic_call(node, magic, offset)

    def dynamic_attribute(self, node: ast.Call, name: str, offset: int) -> None:
        if len(node.args) < 2:
            return
        key = _const_str(node.args[1])
        target = self.names.path(node.args[0])
        if key is None:
            base = _root(target) if target else ""
            if name == "hasattr" or (base and base not in WATCHED and base not in INTERPRETER_MODULES):
                return  # ``getattr(torch.nn, activation)``: an attribute of an ordinary module
            if isinstance(node.args[0], ast.Name) and node.args[0].id in ("self", "cls") and not target:
                return  # ``setattr(self, f"layer{i}", ...)``: the learner's own object
            self.add(node, name, REVIEW, "an attribute whose name is built at run time", offset)
        elif key in INTERPRETER_NAMES or key in _IDENTITY_DUNDERS and name != "getattr":
            self.add(node, key, REVIEW, f"{name} of an attribute that reaches the interpreter", offset)
        elif name in ("setattr", "delattr") and _watched(target):
            self.add(node, f"{target}.{key}", REVIEW, "replaces an attribute of the library", offset)

    def magic(self, node: ast.Call) -> str | None:
        """The method name when ``node`` is ``get_ipython().<method>(...)`` (what a magic becomes)."""
        func = node.func
        if isinstance(func, ast.Attribute) and _name_call(func.value, "get_ipython"):
            return func.attr
        return None

    def magic_call(self, node: ast.Call, method: str, offset: int) -> None:
        name = _const_str(node.args[0]) if node.args else None
        if method == "run_line_magic" and name in _PLAIN_LINE_MAGICS:
            return
        if method in ("run_line_magic", "run_cell_magic") and name in _TIMING_MAGICS:
            body = _const_str(node.args[-1]) or ""
            tree = _parse(body)
            if tree is not None:  # the timed code is read like the rest of the cell
                self.read(tree, offset + node.lineno - (1 if method == "run_line_magic" else 0))
            return
        what = f"%{name}" if name and method.startswith("run_") else ("a shell command" if name else method)
        self.add(node, what, REVIEW, "an IPython magic or shell command: runs code the reader cannot see", offset)

    def attribute(self, node: ast.Attribute, parent, offset: int) -> None:
        attr = node.attr
        base = self.names.path(node.value)
        if attr in INTERPRETER_NAMES:
            if attr == "__dict__" and isinstance(parent, ast.Subscript) and _const_str(parent.slice):
                return  # ``X.__dict__["name"]``: read as ``X.name``
            self.add(node, attr, REVIEW, "reaches the interpreter's machinery", offset)
        elif base and _root(base) == "sys" and attr in _SYS_NAMES:
            self.add(node, attr, REVIEW, "reaches the interpreter's modules or frames", offset)
        elif base and _root(base) == "os" and attr in _OS_NAMES:
            self.add(node, attr, REVIEW, "starts another process or program", offset)
        elif base and _root(base) in _PICKLERS and attr in _UNPICKLE:
            self.add(node, attr, REVIEW, "loads code from bytes", offset)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            if attr in _IDENTITY_DUNDERS:
                self.add(node, attr, REVIEW, "changes what an object says it is", offset)
            elif _watched(base):
                self.add(node, f"{base}.{attr}", REVIEW, "replaces an attribute of the library", offset)

    def chain(self, node, parent, path: str, offset: int) -> None:
        if _root(path) in INTERPRETER_MODULES and not isinstance(parent, (ast.Import, ast.ImportFrom)):
            self.add(node, _root(path), REVIEW, "reaches the interpreter", offset)
        if _root(path) == "sys" and path.split(".")[1:2] and path.split(".")[1] in _SYS_NAMES:
            if isinstance(node, (ast.Subscript, ast.Call)):  # ``vars(sys)["modules"]``
                self.add(node, path.split(".")[1], REVIEW, "reaches the interpreter's modules", offset)
        self.library(node, path, offset)
        other = self.forbidden_elsewhere(path)
        called = isinstance(parent, ast.Call) and parent.func is node
        if other and not called and not self.refusal(path)[0] and not self.plain_binding(node, parent):
            self.add(
                node,
                path,
                REVIEW,
                f"hands on what answer {other!r} must write itself, where the reader cannot follow it",
                offset,
            )

    def plain_binding(self, node, parent) -> bool:
        """``name = <library object>`` at any level: followed as an alias."""
        return (
            isinstance(parent, ast.Assign)
            and parent.value is node
            and all(isinstance(t, ast.Name) for t in parent.targets)
        )

    def library(self, node, path: str, offset: int) -> None:
        prefix, matched = self.refusal(path)
        if prefix:
            shown = path if matched == path else f"{path}, that is {matched}"
            self.add(node, shown, REFUSED, f"this task asks you to write {_asks(self.reach, matched)} yourself", offset)


# ---------------------------------------------------------------------------
# Reading a notebook's answers
# ---------------------------------------------------------------------------


def definitions(tree: ast.Module) -> dict[str, ast.AST]:
    """Top-level names an answer cell defines (functions, classes, plain assignments) and their code."""
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        out[sub.id] = node
    return out


def _paths_and_names(code: ast.AST, names: _Names) -> tuple[set[str], set[str]]:
    """The library paths ``code`` references and the plain names it loads."""
    paths, loads = set(), set()
    for node in ast.walk(code):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            paths.update(p for _, p in _import_bindings(node))
        elif isinstance(node, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)):
            path = names.path(node)
            if path and _watched(path):
                paths.add(path)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                loads.add(node.id)
    return paths, loads


def read_answers(
    answers: Mapping[str, str],
    exercise: str = "",
    setup: Iterable[str] = (),
    serves: Mapping[str, Iterable[str]] | None = None,
) -> dict[str, list[Finding]]:
    """The findings of each answer cell of one notebook: ``answers`` maps answer id -> source,
    ``exercise`` is its key ("06": the declared reach of each answer; "" for none), ``setup`` the
    sources of the notebook's other cells (their imports name what the answers' names mean).
    ``serves``: for each cell the learner added (its id in ``answers``), the answers whose cells or
    checks come after it: it is read as an answer cell, refused what any of those may not reach."""
    aliases = setup_aliases(setup)
    trees: dict[str, ast.Module] = {}
    unreadable: dict[str, Finding] = {}
    for answer, source in answers.items():
        text = python_text(source)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue  # the kernel stops at it too: the checks fail on their own
        except (ValueError, MemoryError, RecursionError) as exc:
            unreadable[answer] = Finding(1, type(exc).__name__, REVIEW, "the reader could not parse this answer")
            continue
        trees[answer] = tree
        _collect_aliases(tree, aliases)  # answers share one namespace: an import in one serves all
    names = _Names(aliases)
    # Top-level helpers of every answer, and what they reach (followed through each other by name).
    defined: dict[str, tuple[str, set[str], set[str]]] = {}
    for answer, tree in trees.items():
        for name, code in definitions(tree).items():
            paths, loads = _paths_and_names(code, names)
            defined[name] = (answer, paths, loads)
    reaches = _transitive(defined)
    serves = dict(serves or {})
    declared = {a: reach_for(exercise, a) for a in answers if a not in serves} if exercise else {}
    for added, served in serves.items():
        own = tuple(r for r in (declared.get(a) for a in served) if r is not None)
        declared[added] = AnyOf(own) if own else None
    out: dict[str, list[Finding]] = {}
    for answer in answers:
        if answer in unreadable:
            out[answer] = [unreadable[answer]]
            continue
        if answer not in trees:
            out[answer] = []
            continue
        reach = declared.get(answer)
        elsewhere = {a: r for a, r in declared.items() if r is not None and a != answer and a not in serves}
        reader = _Reader(names, reach, elsewhere)
        reader.read(trees[answer])
        if reach is not None:
            _helpers(reader, trees[answer], defined, reaches, answer)
        out[answer] = _unique(reader.findings)
    return out


def _transitive(defined: Mapping[str, tuple[str, set[str], set[str]]]) -> dict[str, set[str]]:
    """Name -> every library path it reaches, through the other answer-defined names it loads."""
    reaches = {name: set(paths) for name, (_, paths, _) in defined.items()}
    changed = True
    while changed:
        changed = False
        for name, (_, _, loads) in defined.items():
            for other in loads & reaches.keys():
                if other != name and not reaches[other] <= reaches[name]:
                    reaches[name] |= reaches[other]
                    changed = True
    return reaches


def _helpers(reader: _Reader, tree, defined, reaches, answer: str) -> None:
    """Refuse a call of a helper from another answer cell that reaches what this answer may not."""
    own = definitions(tree)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)) or node.id not in defined:
            continue
        owner = defined[node.id][0]
        if owner == answer and node.id in own:
            continue  # this cell's own definitions were read above, line by line
        for path in sorted(reaches.get(node.id, ())):
            prefix, matched = reader.refusal(path)
            if prefix:
                reader.add(
                    node,
                    f"{node.id} -> {matched}",
                    REFUSED,
                    f"answer {owner!r} defines {node.id}, which reaches {matched}; this task asks you to write "
                    f"{_asks(reader.reach, matched)} yourself",
                )
                break


def _unique(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in sorted(findings, key=lambda f: (f.line, f.kind, f.what)):
        key = (f.line, f.what, f.kind)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def read_answer(source: str) -> list[Finding]:
    """The findings of one answer read on its own, with no declared reach: only what reaches the interpreter."""
    return read_answers({"answer": source})["answer"]


def interpreter_names(source: str) -> list[str]:
    """The names the review flag reports for ``source`` read on its own, sorted (no duplicates)."""
    return sorted({f.what for f in read_answer(source) if f.kind == REVIEW})


def summary(findings: Iterable[Finding], limit: int = 6) -> str:
    """Findings as one line for a warning: the first ``limit``, then how many more."""
    findings = list(findings)
    shown = "; ".join(f.text() for f in findings[:limit])
    return shown + (f"; and {len(findings) - limit} more" if len(findings) > limit else "")
