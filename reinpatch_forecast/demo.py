"""A small end-to-end run of the ReinPatch network on a synthetic task (``make demo``).

Windows of noise with one spike; the future is the spike's amplitude. The learned patcher
is trained by GRPG beside the same backbone with uniform patches, and both losses are printed.
"""

from __future__ import annotations

import time

import torch

from .nn import ReinPatchConfig, ReinPatchNetwork


def _batch(n: int, lookback: int, horizon: int, generator: torch.Generator):
    x = 0.3 * torch.randn(n, lookback, generator=generator)
    amplitude = torch.rand(n, generator=generator) * 4 - 2
    x[torch.arange(n), torch.randint(0, lookback, (n,), generator=generator)] += amplitude
    return x.unsqueeze(-1), amplitude[:, None, None].expand(n, horizon, 1).clone()


def main(steps: int = 300, lookback: int = 96, horizon: int = 8) -> None:
    for patcher in ("learned", "uniform"):
        torch.manual_seed(0)
        network = ReinPatchNetwork(ReinPatchConfig(
            input_length=lookback, output_length=horizon, compression_rate=12, patcher=patcher,
            group_size=8 if patcher == "learned" else 1, d_model=32, n_layers=1, dropout=0.0,
            use_resampled=False, local_activation=False, revin=False, entropy_coef=0.0,
        ))
        optimiser = torch.optim.Adam([
            {"params": network.backbone_parameters(), "lr": 1e-3},
            {"params": network.patcher_parameters(), "lr": 3e-3},
        ])
        generator = torch.Generator().manual_seed(0)
        start = time.perf_counter()
        for step in range(1, steps + 1):
            losses = network.training_losses(*_batch(64, lookback, horizon, generator))
            optimiser.zero_grad()
            losses.loss.backward()
            optimiser.step()
            if step % 50 == 0:
                print(f"[{patcher:>7}] step {step:4d}  backbone loss {losses.backbone_loss:.3f}  "
                      f"policy loss {losses.policy_loss:+.4f}  reward {losses.mean_reward:.3f}")
        network.eval()
        with torch.no_grad():
            x, y = _batch(2000, lookback, horizon, torch.Generator().manual_seed(1))
            mse = ((network(x)[..., 0] - y[..., 0]) ** 2).mean().item()
        print(f"[{patcher:>7}] validation MSE {mse:.3f}  ({time.perf_counter() - start:.1f} s)\n")


if __name__ == "__main__":
    main()
