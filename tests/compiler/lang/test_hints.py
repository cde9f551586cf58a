"""Hints of unknown-name errors that are true (issue 40): a suggestion of the kind the context
admits, different hardware said so with the parameterised form, and the pointer to the
library's generated list. Each trap of the issue compiles a small file through topoc.loads."""

from __future__ import annotations

import pytest

import topoc
from topoc.compiler.base.diagnostics import CompileError
from topoc.compiler.lang import hints

HEAD = 'use "nvidia/links.topo"\nuse "nvidia/devices.topo"\n'


def messages(text: str) -> list[str]:
    with pytest.raises(CompileError) as exc:
        topoc.loads(HEAD + text)
    return [d.message for d in exc.value.diagnostics]


def test_dgxh200_is_not_offered_dgxh100_silently():
    (m,) = messages('use "nvidia/dgx_h100.topo"\ngroup C { node[4] : DGXH200 }\nsystem c : C\n')
    assert "did you mean" not in m
    assert "'DGXH100' is different hardware (a group of H100 GPUs)" in m
    assert "write 'DGXH100(G = H200)'" in m
    assert '"nvidia/dgx_h200.topo" is that system' in m
    assert m.endswith("(library names and figures: docs/library.md)")


def test_the_parameterised_form_compiles_to_h200s():
    """What the hint says to write builds the hardware the typed name meant."""
    s = topoc.loads(HEAD + 'use "nvidia/dgx_h100.topo"\n'
                    "group C { node[4] : DGXH100(G = H200) }\nsystem c : C\n")
    assert {g.model.name for g in s.gpus} == {"H200"} and len(s.gpus) == 32


def test_q3400_on_a_switch_is_not_offered_a_gpu():
    (m,) = messages("group F { leaf : Q3400 }\nsystem f : F\n")
    assert "B300" not in m
    assert "'QX800'" in m and "mentions 'Q3400'" in m


def test_a_member_named_nothing_in_particular_gets_the_family_of_its_letters():
    """``x`` says no kind; ``Q...`` names in the library are all switches, so no GPU."""
    for typed in ("Q300", "Q3300"):        # the old hint: did you mean 'B300'?
        (m,) = messages(f"group F {{ x : {typed} }}\nsystem f : F\n")
        assert "B300" not in m and "'QX800' is different hardware" in m, m


def test_a_switch_member_is_offered_switches_only():
    (m,) = messages("group F { spine : B3000 }\nsystem f : F\n")    # was: 'B300'?
    assert "'B300'" not in m and "'B200'" not in m


def test_another_model_number_is_different_hardware():
    (m,) = messages("group F { spine : QX900 }\nsystem f : F\n")
    assert "'QX800' is different hardware (a net_switch: 800 Gb/s, 144 infiniband ports)" in m


def test_a_misspelling_still_gets_did_you_mean():
    (m,) = messages("group G { gpu[2] : H100  sw : NVSwitch3\n gpu[*] <-> sw : nvlnk4 }\n"
                    "system s : G\n")
    assert "did you mean 'nvlink4'?" in m


def test_a_gpu_parameter_is_offered_gpus_only():
    text = ('use "nvidia/dgx_h100.topo"\n'
            "group C { node : DGXH100(G = CX8x) }\nsystem c : C\n")
    (m,) = messages(text)
    assert "did you mean" not in m          # the old hint: did you mean 'CX8'?
    assert "'CX8' is a nic: 800 Gb/s, but parameter 'G' takes a gpu" in m


def test_a_link_between_infiniband_ends_is_not_offered_nvlink():
    (m,) = messages("group G { nic : CX7  leaf : QM9700\n nic <-> leaf : nvlink6 }\n"
                    "system s : G\n")
    assert "nvlink5" not in m


def test_a_typo_of_a_link_the_ends_cannot_take_says_why():
    (m,) = messages("group G { nic : CX7  leaf : QM9700\n nic <-> leaf : nvlnk4 }\n"
                    "system s : G\n")
    assert "'nvlink4' is a link of class nvlink" in m
    assert "'nic' (CX7) and 'leaf' (QM9700) take infiniband links only" in m


def test_a_generation_is_not_chosen_for_the_user():
    (m,) = messages("group G { sw : NVSwitch }\nsystem s : G\n")
    assert "'NVSwitch2', 'NVSwitch3' or 'NVSwitch5'" in m


def test_a_library_name_not_imported_says_which_file():
    (m,) = messages("group C { node : HGXH200 }\nsystem c : C\n")
    assert 'add use "nvidia/hgx_h200.topo"' in m


def test_roles_come_from_the_library_groups():
    assert hints.role_kinds("leaf").kinds >= {"net_switch"}
    assert "gpu" not in hints.role_kinds("leaf_sw").kinds
    assert hints.role_kinds("node").kinds == {"group"}
    assert hints.role_kinds("gpu").kinds == {"gpu"}
    assert hints.role_kinds("widget") is None


@pytest.mark.parametrize("typed, offered, different", [
    ("DGXH200", "DGXH100", True), ("QX900", "QX800", True), ("B300", "H300", True),
    ("nvlnk4", "nvlink4", False), ("Nod", "Node", False), ("h100", "H100", False)])
def test_different_hardware(typed, offered, different):
    assert hints.different_hardware(typed, offered) is different


def test_an_unknown_parent_is_offered_models_of_the_kind_its_body_fits():
    with pytest.raises(CompileError) as exc:
        topoc.loads(HEAD + "device MyH20 : H20 { hbm = 96 GB }\n"
                    "device Y : NVSwitch { reduction = true }\n")
    first, second = (d.message for d in exc.value.diagnostics)
    assert "'H200' is different hardware (a gpu model)" in first       # was: no hint
    assert "'NVSwitch2', 'NVSwitch3' or 'NVSwitch5'" in second           # was: 'switch'?
    assert first.endswith("(library names and figures: docs/library.md)")


def test_a_system_of_the_library_named_like_the_typo_is_shown_in_its_right_form():
    """Without dgx_h100.topo imported, DGXH200 is the library's dgx_h200.topo system."""
    with pytest.raises(CompileError) as exc:
        topoc.loads('use "nvidia/devices.topo"\ngroup C { node[4] : DGXH200 }\nsystem c : C\n')
    (m,) = (d.message for d in exc.value.diagnostics)
    assert ('the library\'s "nvidia/dgx_h200.topo" is that system: write \'DGXH100(G = H200)\' '
            'from "nvidia/dgx_h100.topo"') in m


def test_a_library_name_out_of_scope_is_offered_with_its_file():
    with pytest.raises(CompileError) as exc:
        topoc.loads('use "nvidia/devices.topo"\ngroup G { nic : CX7  leaf : QM9700\n'
                    " nic <-> leaf : xdr2 }\nsystem s : G\n")
    (m,) = (d.message for d in exc.value.diagnostics)
    assert "'xdr' (add use \"nvidia/links.topo\")" in m
