"""Issue 25: lint and cost answers a new user can trust: no false W406 for leaves that carry
whole rails, E220 about a library device at the user's line, the bottleneck of a host-staged
pair named as the link that limits it."""

from __future__ import annotations

import topoc
from topoc.compiler.collectives.coster import cost
from topoc.compiler.ir.groups import select_group
from topoc.compiler.lint.lint import LintConfig, lint_file, lint_system

from .test_rules import BASE, NODE


def _w406(text: str) -> list[str]:
    return [d.message for d in lint_system(topoc.loads(text), LintConfig()) if d.code == "W406"]


def test_leaves_that_carry_two_whole_rails_are_aligned():
    text = BASE + NODE + ("group Four { node[4] : Node  leaf[2] : L\n"
                          "  node[*].nic[n] <-> leaf[n / 2] : ib }\nsystem four : Four\n")
    assert _w406(text) == []


def test_a_nic_off_its_rail_is_still_found_among_two_rail_leaves():
    text = BASE + NODE + ("group Four { node[4] : Node  leaf[2] : L\n"
                          "  node[0].nic[n] <-> leaf[((n + 2) % 4) / 2] : ib\n"
                          "  node[1..3].nic[n] <-> leaf[n / 2] : ib }\nsystem four : Four\n")
    (message,) = _w406(text)
    assert "rails 0, 1" in message or "rails 2, 3" in message


def test_e220_about_a_library_device_is_at_the_users_line(tmp_path):
    path = tmp_path / "two.topo"
    path.write_text('use "nvidia/dgx_h100.topo"\n'
                    "group Two {\n  a : DGXH100\n  b : DGXH100\n"
                    "  a.gpu[0] <-> b.gpu[0] : nvlink4 x 4\n}\nsystem two : Two\n")
    found = [d for d in lint_file(path) if d.code == "E220"]
    assert found and all(d.span.path == str(path) for d in found)
    assert found[0].span.line == 5


def test_the_bottleneck_of_a_host_staged_pair_is_the_link_that_limits():
    system = topoc.loads('''link pc : pcie { bandwidth = 48 GB/s }
link upi : inter_socket { bandwidth = 22 GB/s }
device G : gpu { hbm = 80 GB }
device C : cpu { }
group B { g[2] : G  c[2] : C  g[i] <-> c[i] : pc  c[0] <-> c[1] : upi }
system b : B
''')
    c = cost(system, select_group(system, None, None, "0,1"), "allreduce", 2**30)
    assert c.bottleneck == "inter_socket" and c.bottleneck_link.endswith(":upi")


def test_hierarchical_cost_of_uneven_domains_is_refused_like_schedule():
    import pytest
    from topoc.compiler.collectives.cost import CostError
    from ...conftest import LIBRARY
    system = topoc.load(LIBRARY / "nvidia" / "h100_cluster.topo")
    group = select_group(system, None, None, "0..8")
    with pytest.raises(CostError, match="same number of ranks"):
        cost(system, group, "allreduce", 2**20, algorithm="hierarchical")
