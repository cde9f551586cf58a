"""The failure domains a file implies, by class (``classes``), and each domain's devices
(``Instances.devices``): what ``blast`` degrades, found over numpy arrays.

A domain is a device of a kind that fails on its own (``DEVICE_DOMAINS``), a host, an instance
that holds only NVLink switches (an NVSwitch tray) or one that holds several hosts (a rack).
The instances are the dotted prefixes of the device ids (``c.rack3.tray1`` of
``c.rack3.tray1.sc0.gpu0``), numbered once (``ir.instances``), and the passes over them (the
models they hold, the hosts inside them) run in numpy up the tree, depth by depth: an
8,192-rack cluster has 1.7 M devices and half a million instances, and a pass over either in
Python took seconds.
"""

from __future__ import annotations

from ..base.arrays import unique
from ..base.gcpause import gc_paused
from ..ir.hosts import HostnameError, hosts as host_list
from ..ir.instances import Instances, instances
from ..ir.modelcodes import model_numbers
from ..ir.system import System, device_indices

#: Device kinds that are failure domains on their own.
DEVICE_DOMAINS = ("gpu", "nic", "dpu", "pcie_switch", "switch", "net_switch")


@gc_paused()
def classes(system: System) -> dict[tuple[str, tuple], list[str]]:
    """Every failure domain, by class: (what, signature) -> the members' ids. Alike domains
    share the signature: a device's kind, model, distance from the NICs and lanes; a host's,
    NVSwitch tray's or rack's set of device kinds and models. Classes in the order of their
    first member: the devices in declaration order, then the hosts by id, then the other
    instances in the order of their first devices (outer first where two share it)."""
    import numpy as np

    code, models = model_numbers(system)
    tree = instances(system)
    out: dict[tuple[str, tuple], list[str]] = {}
    _device_classes(system, code, models, out)
    # every instance's models as bits (Python ints past 63 models), its subtree's at once
    dtype = object if len(models) > 64 else np.uint64
    bit = np.array([1 << c for c in range(len(models))], dtype=dtype)
    held_by = tree.holder >= 0
    m = max(1, len(models))
    pairs = unique(tree.holder[held_by] * m + code[held_by])
    mask = np.zeros(len(tree.names), dtype=dtype)
    if len(pairs):
        np.bitwise_or.at(mask, pairs // m, bit[pairs % m])
    mask = tree.upward(mask, np.bitwise_or)
    labels = [f"{m.kind}:{m.name}" for m in models]
    shapes: dict[int, tuple[str, ...]] = {}

    def shape(bits: int) -> tuple[str, ...]:
        found = shapes.get(bits)
        if found is None:
            found = shapes[bits] = tuple(sorted({labels[c] for c in range(len(models))
                                                 if bits >> c & 1}))
        return found

    hosts = _host_masks(system, tree, mask, code)
    for h in sorted(hosts):
        out.setdefault(("host", ("host", shape(hosts[h]))), []).append(h)
    # hosts strictly inside each instance: each host counted at its innermost holder, then
    # summed up the tree
    base = np.zeros(len(tree.names), dtype=np.int64)
    is_host = np.zeros(len(tree.names), dtype=np.bool_)
    for h in hosts:
        k = tree.holder_of(h)
        if k >= 0:
            base[k] += 1
        own = tree.number.get(h)
        if own is not None:
            is_host[own] = True
    held = tree.upward(base, np.add)
    distinct, inverse = np.unique(mask, return_inverse=True)
    trayish = np.array([all(label.startswith("switch:") for label in shape(int(b)))
                        for b in distinct.tolist()], dtype=np.bool_)[inverse.reshape(-1)]
    pick = ~is_host & (trayish | (held > 1))
    rows = np.flatnonzero(pick)
    rows = rows[np.lexsort((tree.depth[rows], tree.first[rows]))]
    for k, tray in zip(rows.tolist(), trayish[rows].tolist()):
        found = shape(int(mask[k]))
        if tray:
            out.setdefault(("nvswitch tray", ("tray", found)), []).append(tree.names[k])
        else:
            out.setdefault(("rack", ("rack", found)), []).append(tree.names[k])
    return out


def _device_classes(system: System, code, models, out: dict) -> None:
    """The devices that are failure domains on their own, by (kind, model, level, lanes), in
    ``out`` in the order of each class's first device (``classes``)."""
    import numpy as np

    from ..ir.summary import level_array

    devices = system.devices
    wanted = np.array([m.kind in DEVICE_DOMAINS for m in models], dtype=np.bool_)
    at = np.flatnonzero(wanted[code]) if len(code) else np.zeros(0, dtype=np.int64)
    e = system.ends
    src, dst, lanes = e.arrays(None, ("src", "dst", "lanes"))
    degree = np.bincount(src, weights=lanes, minlength=len(devices)) + \
        np.bincount(dst, weights=lanes, minlength=len(devices))
    level = level_array(system)
    # (model, level, degree) as one integer (a row unique over 1.7 M devices sorted them as
    # records, seconds); classes only need each distinct row's first device and members
    deg = degree[at].astype(np.int64)
    lv = level[at] + 1
    rows = (code[at].astype(np.int64) * (int(lv.max(initial=0)) + 1) + lv) * \
        (int(deg.max(initial=0)) + 1) + deg
    _, where, inverse = np.unique(rows, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    order = np.argsort(where, kind="stable")
    members = at[np.argsort(inverse, kind="stable")]
    bounds = np.concatenate(([0], np.cumsum(np.bincount(inverse, minlength=len(where)))))
    for k in order.tolist():
        first = int(at[where[k]])
        model = models[int(code[first])]
        lv = int(level[first])
        sig = (model.kind, model.name, None if lv < 0 else lv, int(degree[first]))
        out[(model.kind, sig)] = [devices[i].id for i in
                                  members[bounds[k]:bounds[k + 1]].tolist()]


def _host_masks(system: System, tree: Instances, mask, code) -> dict:
    """Each host's id -> its devices' models as bits: a declared host is an instance (or a
    device) and holds the devices its id prefixes; inferred hosts are read from
    ``ir.hosts``."""
    if system.hosts:
        index = device_indices(system)
        out = {}
        for h in system.hosts:
            k = tree.number.get(h.id)
            bits = int(mask[k]) if k is not None else 0
            at = index.get(h.id)
            if at is not None:
                bits |= 1 << int(code[at])
            out[h.id] = bits
        return out
    try:
        listed = {h.id: h.devices for h in host_list(system)}
    except HostnameError:
        return {}
    index = device_indices(system)
    out = {}
    for h, ids in listed.items():
        bits = 0
        for i in ids:
            bits |= 1 << int(code[index[i]])
        out[h] = bits
    return out


def domains(system: System) -> list[tuple[str, str, tuple]]:
    """Every failure domain as (what, id, signature): alike domains share the signature."""
    return [(what, ident, sig) for (what, sig), ids in classes(system).items()
            for ident in ids]
