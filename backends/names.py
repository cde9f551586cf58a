"""What each cluster tool accepts as a name, checked once before any export writes a line.

A hostname comes from the file's pattern, ``--hostnames`` or a mapping file, a switch name from
the file's paths; a newline, a quote or a space in either would be a line, a field or a string
of its own in the file Slurm, Kubernetes, ibsim or ibdiagnet loads. Every export calls
``check`` with its consumer's rule first; the error names the host (its id and its name, with
control characters escaped) and what the tool takes.
"""

from __future__ import annotations

import re

import attrs

from ..compiler.analysis.fabric import Fabric
from ..compiler.base.text import visible


class InvalidName(ValueError):
    """A host or switch name the target tool cannot take (the message names it)."""


@attrs.frozen
class Rule:
    """The names one tool takes: ``pattern`` (full match), at most ``max_len`` characters."""

    tool: str
    what: str
    pattern: re.Pattern
    max_len: int


#: slurm.conf(5) / topology.conf(5) node and switch names: hostlist expressions split on ',',
#: '[' and whitespace, so only these.
SLURM = Rule("Slurm", "letters, digits, '-', '_' and '.'", re.compile(r"[A-Za-z0-9_.\-]+"), 255)
#: A Node's metadata.name: an RFC 1123 subdomain (what the API server validates).
K8S_NODE = Rule("Kubernetes node", "an RFC 1123 subdomain: lower-case letters, digits, '-' and "
                "'.', each part starting and ending with a letter or digit",
                re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"),
                253)
#: A label value (the switch names of the tier labels).
K8S_LABEL = Rule("Kubernetes label", "letters, digits, '-', '_' and '.', starting and ending "
                 "with a letter or digit", re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"),
                 63)
#: ibsim's net file quotes node descriptions (``"dgx-01 mlx5_0"``) and ibnetdiscover reads the
#: host back as the description's first word; NodeDescription is 64 bytes.
IBSIM = Rule("ibsim", "letters, digits, '-', '_' and '.'", re.compile(r"[A-Za-z0-9_.\-]+"), 48)
#: ibdm-topo-file(1): whitespace-separated tokens, a host's HCA as ``<hostname>/U<n>``.
IBDIAGNET = Rule("ibdiagnet", "letters, digits, '-', '_' and '.'",
                 re.compile(r"[A-Za-z0-9_.\-]+"), 255)


def _bad(rule: Rule, name: str) -> bool:
    return len(name) > rule.max_len or not rule.pattern.fullmatch(name)


def check(fab: Fabric, hosts: Rule, switches: Rule | None = None) -> None:
    """Raise ``InvalidName`` for the first host (then switch) name ``hosts`` (``switches``,
    default the same rule) does not take."""
    for h in fab.hosts:
        if _bad(hosts, h.name):
            raise InvalidName(f"host '{visible(h.id)}' is called '{visible(h.name)}', which is "
                              f"not a valid {hosts.tool} name ({hosts.what}, at most "
                              f"{hosts.max_len} characters); give --hostnames")
    rule = switches or hosts
    for s in fab.switches:
        if _bad(rule, s.name):
            raise InvalidName(f"switch '{visible(s.device)}' is called '{visible(s.name)}', "
                              f"which is not a valid {rule.tool} name ({rule.what}, at most "
                              f"{rule.max_len} characters)")
