"""The nbval sanitizer lets the same stored outputs pass on CPU, CUDA and MPS.

Rules are read with nbval's own parser, so a rule nbval would drop silently
(e.g. an empty replacement stripped by an editor) fails here.
"""

import re

import pytest
from nbval.plugin import get_sanitize_patterns

from conftest import ROOT

pytestmark = pytest.mark.unit

PATTERNS = get_sanitize_patterns((ROOT / "tests" / "sanitize.cfg").read_text())


def sanitize(text: str) -> str:
    for regex, replace in PATTERNS:
        text = re.sub(regex, replace, text)
    return text


def test_every_rule_is_parsed():
    lines = (ROOT / "tests" / "sanitize.cfg").read_text().splitlines()
    sections = sum(line.startswith("regex:") for line in lines)
    assert len(PATTERNS) == sections == 2


@pytest.mark.parametrize(
    "accelerator, cpu",
    [
        # as a CUDA machine prints them
        (
            "tensor([[1., 1., 1.],\n        [1., 1., 1.]], device='cuda:0')",
            "tensor([[1., 1., 1.],\n        [1., 1., 1.]])",
        ),
        (
            "tensor([[-0.5338],\n        [-0.5338]], device='cuda:0', grad_fn=<AddmmBackward0>)",
            "tensor([[-0.5338],\n        [-0.5338]], grad_fn=<AddmmBackward0>)",
        ),
        ("tensor(3, device='cuda:1')", "tensor(3)"),
        ("tensor([True, False], device='mps:0')", "tensor([True, False])"),
    ],
)
def test_device_suffix_rule_turns_accelerator_text_into_cpu_text(accelerator, cpu):
    assert sanitize(accelerator) == sanitize(cpu) == cpu


def test_address_rule_hides_memory_addresses_but_not_figure_sizes():
    assert sanitize("<object at 0x7f3a2c1b9d90>") == sanitize("<object at 0x55d0e2a1>") == "<object at 0xADDRESS>"
    assert sanitize("<Figure size 640x480 with 1 Axes>") == "<Figure size 640x480 with 1 Axes>"


def test_rules_leave_ordinary_output_alone():
    text = "torch.Size([2, 10])\ndevice(type='cpu')\ncuda available: False"
    assert sanitize(text) == text
