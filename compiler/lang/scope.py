"""Scopes: which declaration a name means in each file, so that a library release never breaks
a user's file (``scoped``).

Every file sees its own declarations first, then those of the files it ``use``s (and theirs, in
turn). A name the user's file declares itself therefore *shadows* a library declaration of the
same name: the user's file means its own, the library's files keep meaning theirs, and a note
(W120) says what was shadowed, where, and how the two differ. Two used files that declare one
name differently are an error (E123) only where that name is used; identical declarations
reached twice (the same link type in two files) are one. ``use "f.topo" as nv`` imports a file's
names only qualified, as ``nv.H200``.

The compiler downstream of ``resolve`` keeps one flat table per family (link types, device
models, groups, models). Scoping is therefore applied by renaming: each distinct declaration gets
one key, its plain name wherever that is unambiguous (always for the user's file, and for every
declaration nobody shadows, so outputs do not change), else ``NAME@file`` (the library's ``H200``
when the user declared an ``H200`` of their own), and every reference in every file is rewritten
to the key of the declaration its file sees. A name a file cannot see at all falls back to the
one declaration the root file sees, as before scopes existed, so files that relied on a name
their importer brought still compile.
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Sequence

import attrs

from . import syntax as s
from ..base.diagnostics import Collector, Note, Span, suggest
from ..ir.kinds import KINDS

#: The items that declare a name in the shared namespace.
DECLS = (s.LinkDecl, s.DeviceDecl, s.ModelDecl, s.GroupDecl)
WHAT = {s.LinkDecl: "link type", s.DeviceDecl: "device model", s.ModelDecl: "model",
        s.GroupDecl: "group"}

Key = Hashable      # a module's identity: its resolved path, or None for text without one
Ident = tuple       # (module key, name): one declaration


@attrs.frozen
class Shadow:
    """A declaration of a non-library file that hides one its imports bring."""

    name: str           # the shadowing declaration's key (its plain name in the user's file)
    hidden: str         # the key the hidden declaration now has (``NAME@file``)
    what: str           # 'device model', 'link type', 'group' or 'model'
    span: Span = attrs.field(eq=False)
    hidden_span: Span = attrs.field(eq=False)


@attrs.frozen
class Scoped:
    """The modules with every declaration and reference renamed to its key, and the shadows."""

    modules: tuple[s.Module, ...]
    shadows: tuple[Shadow, ...]


def _label(key: Key, library: str) -> str:
    """How a ``NAME@file`` key names its file: relative to the library, else the base name."""
    if key is None:
        return "<input>"
    path = os.fspath(key)
    if path.startswith(library + os.sep):
        return os.path.relpath(path, library).replace(os.sep, "/")
    return os.path.basename(path)


class _Scopes:
    def __init__(self, modules: Sequence[tuple[Key, s.Module]],
                 uses: dict[Key, list[tuple[s.Use, Key]]], root: Key, library: str,
                 diags: Collector):
        self.modules = dict(modules)
        self.order = [k for k, _ in modules]
        self.uses, self.root, self.library, self.diags = uses, root, library, diags
        self.own: dict[Key, dict[str, object]] = {}
        self.canon: dict[Ident, Ident] = {}
        self.items: dict[Ident, object] = {}
        self.by_name: dict[str, list[Ident]] = {}
        for key in self.order:
            table: dict[str, object] = {}
            for item in self.modules[key].items:
                if not isinstance(item, DECLS):
                    continue
                if item.name in table:
                    diags.error("E120", f"'{item.name}' is declared twice", item.span,
                                Note("first declared here", table[item.name].span))
                    continue
                table[item.name] = item
                ident = (key, item.name)
                self.items[ident] = item
                same = next((o for o in self.by_name.get(item.name, ())
                             if type(self.items[o]) is type(item) and self.items[o] == item), None)
                self.canon[ident] = same or ident
                if same is None:
                    self.by_name.setdefault(item.name, []).append(ident)
            self.own[key] = table
        self._visible: dict[tuple[Key, bool], dict[str, frozenset]] = {}
        self.hides: dict[Ident, set] = {}     # a declaration -> those it was declared over
        root_seen = self.visible(root)
        self.keys: dict[Ident, str] = {}
        for name, idents in self.by_name.items():
            for ident in idents:
                plain = ident[0] == root or root_seen.get(name) == frozenset([ident]) \
                    or len(idents) == 1
                self.keys[ident] = name if plain else f"{name}@{_label(ident[0], library)}"

    def visible(self, key: Key, own: bool = True) -> dict[str, frozenset]:
        """Name -> the declarations ``key``'s file sees under it. Its own hide its imports';
        of two an import brings, one that a file declared over the other (it saw the other
        and shadowed it) hides it too, so a file reached by two paths means the same thing."""
        memo = self._visible.get((key, own))
        if memo is not None:
            return memo
        seen: dict[str, set] = {}
        for use, target in self.uses.get(key, ()):
            if use.alias is None:
                for name, idents in self.visible(target).items():
                    seen.setdefault(name, set()).update(idents)
        for name, idents in seen.items():
            if len(idents) > 1:
                hidden = set().union(*(self.hides.get(i, ()) for i in idents))
                idents -= hidden
        if own:
            for name in self.own.get(key, {}):
                ident = self.canon[(key, name)]
                below = seen.get(name, set()) - {ident}
                if below:
                    self.hides.setdefault(ident, set()).update(
                        below, *(self.hides.get(i, ()) for i in below))
                seen[name] = {ident}
        out = {n: frozenset(v) for n, v in seen.items()}
        self._visible[(key, own)] = out
        return out

    def aliases(self, key: Key) -> dict[str, Key]:
        return {u.alias: t for u, t in self.uses.get(key, ()) if u.alias is not None}

    def lookup(self, key: Key, name: str, span: Span, *, own: bool = True,
               kinds: tuple = DECLS) -> str | None:
        """The key of the declaration ``name`` means in ``key``'s file; None when the name
        declares nothing there (a parameter, an index, a typo elaborate reports)."""
        if "." in name:
            alias, rest = name.split(".", 1)
            target = self.aliases(key).get(alias)
            if target is None:
                return None
            found = self.visible(target).get(rest)
            if not found:
                self.diags.error("E110", f"'{_label(target, self.library)}' (imported as "
                                 f"'{alias}') declares no '{rest}'"
                                 + suggest(rest, self.visible(target)), span)
                return None
            return self._one(rest, found, span, kinds)
        found = self.visible(key, own).get(name)
        if not found and key == self.root and name in self.by_name:
            self._not_visible(name, span)
            return None
        if not found and key != self.root:     # the user's file sees what it imports, no more
            found = self.visible(self.root).get(name)
            if not found or len(found) > 1:
                found = frozenset(self.by_name.get(name, ()))
                if len(found) != 1:
                    return None
        if not found:
            return None
        return self._one(name, found, span, kinds)

    def _not_visible(self, name: str, span: Span) -> None:
        """E110 for a name only a qualified import brings (``use ... as nv``)."""
        owners = sorted({i[0] for i in self.by_name[name]}, key=self.order.index)
        qualified = [f"{a}.{name}" for a, t in self.aliases(self.root).items()
                     if name in self.visible(t)]
        self.diags.error("E110", f"'{name}' is declared in "
                         + ", ".join(_label(o, self.library) for o in owners)
                         + ", which this file does not use unqualified"
                         + (f"; write '{qualified[0]}'" if qualified else ""), span)

    def _one(self, name: str, found: frozenset, span: Span, kinds: tuple) -> str | None:
        found = sorted((i for i in found if isinstance(self.items[i], kinds)), key=self._where)
        if not found:
            return None
        if len(found) > 1:
            self.diags.error("E123", f"'{name}' is declared differently by {len(found)} used "
                             "files; declare it in this file to choose, or import one of them "
                             "with 'use \"...\" as NAME' and write NAME." + name, span,
                             *(Note(f"declared here ({_label(i[0], self.library)})",
                                    self.items[i].span) for i in found))
            return None
        return self.keys[found[0]]

    def _where(self, ident: Ident):
        return self.order.index(ident[0])

    # -- rewriting -------------------------------------------------------------------------
    def module(self, key: Key) -> s.Module:
        """``key``'s module with its declarations renamed to their keys, duplicates of another
        file's identical declaration dropped, and every reference rewritten."""
        items = []
        for item in self.modules[key].items:
            if isinstance(item, DECLS):
                ident = (key, item.name)
                if self.own[key].get(item.name) is not item or self.canon[ident] != ident:
                    continue     # a repeat in this file (E120 said so) or a copy of another's
                item = attrs.evolve(self.item(key, item), name=self.keys[ident])
            elif isinstance(item, s.SystemDecl):
                item = attrs.evolve(item, group=self.ref(key, item.group, item.group_span),
                                    args=self.args(key, item.args, frozenset()))
            items.append(item)
        return attrs.evolve(self.modules[key], items=tuple(items))

    def dedup(self, key: Key) -> s.Module:
        """``key``'s module less its repeats and copies, nothing renamed (the fast path)."""
        module = self.modules[key]
        keep = tuple(i for i in module.items if not isinstance(i, DECLS) or (
            self.own[key].get(i.name) is i and self.canon[(key, i.name)] == (key, i.name)))
        return module if len(keep) == len(module.items) else attrs.evolve(module, items=keep)

    def ref(self, key: Key, name: str, span: Span, **kw) -> str:
        return self.lookup(key, name, span, **kw) or name

    def args(self, key: Key, args: tuple[s.Arg, ...], local: frozenset) -> tuple[s.Arg, ...]:
        """Arguments naming a device model (``G = H200``) rewritten; numbers and the group's
        own names left alone."""
        return tuple(attrs.evolve(a, value=self.var(key, a.value, local)) for a in args)

    def var(self, key: Key, expr, local: frozenset):
        if not isinstance(expr, s.Var) or expr.name in local:
            return expr
        found = self.lookup(key, expr.name, expr.span, kinds=(s.DeviceDecl,))
        return expr if found is None else attrs.evolve(expr, name=found)

    def item(self, key: Key, item):
        if isinstance(item, s.DeviceDecl) and item.kind not in KINDS:
            # ``device H200 : H200 { ... }``: a file's own H200 made from the one it imports
            own = item.kind != item.name
            return attrs.evolve(item, kind=self.ref(key, item.kind, item.kind_span, own=own,
                                                    kinds=(s.DeviceDecl,)))
        if not isinstance(item, s.GroupDecl):
            return item
        typed = frozenset(p.name for p in item.params if p.type in KINDS)
        local = frozenset([*(p.name for p in item.params),
                           *(st.name for st in item.body if isinstance(st, s.Let))])
        params = tuple(attrs.evolve(p, default=self.var(key, p.default, frozenset()))
                       if p.name in typed and p.default is not None else p for p in item.params)
        body = []
        for st in item.body:
            if isinstance(st, s.Instance):
                target = st.target if st.target in typed else \
                    self.ref(key, st.target, st.target_span,
                             kinds=(s.DeviceDecl, s.GroupDecl))
                st = attrs.evolve(st, target=target, args=self.args(key, st.args, local))
            elif isinstance(st, s.Connection):
                st = attrs.evolve(st, link=self.ref(key, st.link, st.link_span,
                                                    kinds=(s.LinkDecl,)))
            body.append(st)
        return attrs.evolve(item, params=params, body=tuple(body))

    def shadows(self) -> list[Shadow]:
        """Each declaration of a file outside the library that hides an imported one."""
        out = []
        for key in self.order:
            if key is not None and os.fspath(key).startswith(self.library + os.sep):
                continue
            hidden = self.visible(key, own=False)
            for name, item in self.own[key].items():
                ident = self.canon[(key, name)]
                for other in sorted(hidden.get(name, ()), key=self._where):
                    if other != ident:
                        out.append(Shadow(self.keys[ident], self.keys[other],
                                          WHAT[type(item)], item.span, self.items[other].span))
        return out


def scoped(modules: Sequence[tuple[Key, s.Module]], uses: dict[Key, list[tuple[s.Use, Key]]],
           root: Key, library: str, diags: Collector) -> Scoped:
    """Scope ``modules`` (imports first, the root file last): see the module docstring."""
    scopes = _Scopes(modules, uses, root, library, diags)
    # Renaming rebuilds every statement of a file; when every key is its plain name and no
    # file imports with 'as', it would change nothing but drop identical repeats, so a large
    # file keeps its own nodes.
    renames = any(k != ident[1] for ident, k in scopes.keys.items()) or \
        any(u.alias for pairs in uses.values() for u, _ in pairs)
    out = tuple(scopes.module(k) if renames else scopes.dedup(k) for k, _ in modules)
    return Scoped(out, tuple(scopes.shadows()))

