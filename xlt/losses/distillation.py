"""Knowledge distillation from soft labels (FILTER's self-teaching loss, Fang et al. AAAI 2021, Sec. 3.3), over
whatever outputs a task declares (``Task.outputs``): sentence-level logits (B, C) and token-level logits (B, T, C)
read at the positions of ``soft_mask``."""
from __future__ import annotations

import torch
from torch import nn


def distillation_kl(out: dict, soft: dict, soft_mask: torch.Tensor, outputs: dict[str, str],
                    temperature: float = 1.0) -> torch.Tensor:
    """Σ over outputs of KL(p_teacher ‖ p_student), each averaged over its rows (sentences, or labelled words),
    scaled by T² as in distillation so its gradient does not shrink with the temperature."""
    kl = nn.functional.kl_div
    total = torch.zeros((), device=soft_mask.device)
    for name, level in outputs.items():
        logits, target = out[name], soft[name]
        if level == "token":
            logits, target = logits[soft_mask], target[soft_mask]
        total = total + kl((logits / temperature).log_softmax(-1), target, reduction="batchmean")
    return total * temperature ** 2


@torch.no_grad()
def soft_targets(out: dict, batch: dict, outputs: dict[str, str], temperature: float = 1.0
                 ) -> list[dict[str, torch.Tensor]]:
    """A teacher's soft distributions per item: sentence-level (C,), token-level (n_words, C) at each word's
    label-carrying sub-token."""
    items: list[dict[str, torch.Tensor]] = [{} for _ in range(batch["input_ids"].shape[0])]
    counts = batch["word_mask"].sum(1).tolist() if "word_mask" in batch else []
    for name, level in outputs.items():
        probs = (out[name] / temperature).softmax(-1).cpu()
        for b, item in enumerate(items):
            item[name] = (probs[b] if level == "sentence" else
                          probs[b, batch["word_positions"][b, :counts[b]].cpu()]).clone()
    return items
