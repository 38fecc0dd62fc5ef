"""The encoder's self-attention: the function of ``nn.MultiheadAttention`` with the same
weights, the same initial weights for a seed, and state dicts saved under that module's names
load."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from reinpatch_forecast.nn.backbone import SelfAttention


def _reference(attention: SelfAttention, d: int, heads: int) -> nn.MultiheadAttention:
    module = nn.MultiheadAttention(d, heads, batch_first=True)
    with torch.no_grad():
        module.in_proj_weight.copy_(attention.qkv.weight)
        module.in_proj_bias.copy_(attention.qkv.bias)
        module.out_proj.weight.copy_(attention.out.weight)
        module.out_proj.bias.copy_(attention.out.bias)
    return module


@pytest.mark.parametrize("heads", [1, 4])
@pytest.mark.parametrize("masked", [False, True])
def test_attention_equals_multihead_attention(heads, masked):
    torch.manual_seed(0)
    d, rows, tokens = 16, 5, 7
    attention = SelfAttention(d, heads)
    with torch.no_grad():  # biases start at zero: make them matter
        attention.qkv.bias.normal_()
        attention.out.bias.normal_()
    reference = _reference(attention, d, heads)
    h = torch.randn(rows, tokens, d, requires_grad=True)
    unused = None
    if masked:  # the last slots of some rows are empty (at-most budget), never all of them
        unused = torch.arange(tokens) >= torch.tensor([7, 5, 3, 1, 6])[:, None]  # (M, N)
    got = attention(h, unused)
    want = reference(h, h, h, key_padding_mask=unused, need_weights=False)[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    (grad_got,) = torch.autograd.grad(got.square().sum(), h)
    (grad_want,) = torch.autograd.grad(want.square().sum(), h)
    torch.testing.assert_close(grad_got, grad_want, rtol=1e-4, atol=1e-5)


def test_a_seed_draws_the_weights_of_multihead_attention():
    torch.manual_seed(3)
    attention = SelfAttention(32, 4)
    after = torch.rand(3)
    torch.manual_seed(3)
    reference = nn.MultiheadAttention(32, 4, batch_first=True)
    assert torch.equal(attention.qkv.weight, reference.in_proj_weight)
    assert torch.equal(attention.qkv.bias, reference.in_proj_bias)
    assert torch.equal(attention.out.weight, reference.out_proj.weight)
    assert torch.equal(attention.out.bias, reference.out_proj.bias)
    assert torch.equal(torch.rand(3), after)  # the generator advanced by the same draws


def test_a_multihead_attention_state_dict_loads():
    torch.manual_seed(1)
    saved = nn.Sequential(nn.MultiheadAttention(8, 2, batch_first=True))
    model = nn.Sequential(SelfAttention(8, 2))
    model.load_state_dict(saved.state_dict())
    h = torch.randn(2, 5, 8)
    torch.testing.assert_close(model[0](h), saved[0](h, h, h, need_weights=False)[0])
    assert set(model.state_dict()) == {"0.qkv.weight", "0.qkv.bias", "0.out.weight",
                                       "0.out.bias"}
