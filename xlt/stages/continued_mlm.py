"""Continued masked-language-model pre-training (domain- / language-adaptive pre-training; Gururangan et al. ACL
2020, and the MLM step of XLM / Unicoder): the encoder keeps training with BERT's MLM objective on plain text of
the target language (and, to keep the source language, of the source language too), before fine-tuning.

multilingual-e5-small ships without an MLM head (it was trained contrastively), so the head is new: the shipped
configs give it a first phase with the encoder frozen, then train everything.  Evaluation on the held-out lines of
the corpora: MLM loss and accuracy with a fixed masking, and pseudo-perplexity (Salazar et al. ACL 2020: every
token masked in turn, PPPL = exp(-mean log p(token | rest))).  With a trimmed vocabulary both are computed with
the softmax over the run's kept ids (the corpora's, held-out included), stated in the results.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from xlt.config import positive, ranged
from xlt.core.batching import IGNORE, length_bucketed_batches, pad_ids
from xlt.core.vocab import token_id
from xlt.losses.mlm import MaskedLanguageModel, mask_tokens, save_mlm_head
from xlt.stages import PretrainModel, Stage


@dataclass
class ContinuedMLMOptions:
    mask_prob: float = ranged(0.15, above=0, high=1)  # share of tokens masked (BERT's 80/10/10 replacement)
    eval_sequences: int = 1000  # held-out sequences for the held-out MLM loss (fixed masking)
    pppl_sequences: int = 100  # held-out sequences for pseudo-perplexity (one forward pass per token)
    bucket_size: int = positive(50)  # batches per length-sorted bucket (dynamic padding)



class ContinuedMLM(Stage):
    name = "continued_mlm"
    description = "continued masked-LM pre-training of the encoder on plain text (held-out MLM loss, PPPL)"
    paper = "Devlin et al. 2019; Gururangan et al. 2020"
    Options = ContinuedMLMOptions

    def __init__(self, cfg, tokenizer, corpus, trim) -> None:
        super().__init__(cfg, tokenizer, corpus, trim)
        ids = {name: token_id(tokenizer, name) for name in ("<pad>", "<mask>", "<s>", "</s>")}
        to_run = trim.old_to_new if trim is not None else {i: i for i in ids.values()}
        self.pad, self.mask_id = to_run[ids["<pad>"]], to_run[ids["<mask>"]]
        self.specials = torch.tensor(sorted(to_run[i] for i in ids.values()))
        self.vocab = len(trim.kept) if trim is not None else tokenizer.get_vocab_size()
        self.lengths = [len(s) for s in corpus.train]

    def objectives(self, encoder: nn.Module) -> dict[str, nn.Module]:
        c = encoder.config
        return {"mlm": MaskedLanguageModel.for_encoder(c).resize(self.vocab)}

    def batches(self, phase, epoch: int) -> list[list[int]]:
        return length_bucketed_batches(self.lengths, phase.batch_size, self.options.bucket_size, self.cfg.seed, epoch)

    def count(self, indices: list[int]) -> tuple[int, int]:
        return sum(self.lengths[i] for i in indices), len(indices)

    def _masked(self, seqs: list[list[int]], generator: torch.Generator) -> dict:
        ids, attention = pad_ids(seqs, self.pad)
        special = torch.isin(ids, self.specials)
        masked, labels = mask_tokens(ids, attention, special, self.mask_id, self.vocab, generator,
                                     self.options.mask_prob)
        return {"objective": "mlm", "input_ids": masked, "attention_mask": attention, "mlm_labels": labels}

    def make_batch(self, objective: str, indices: list[int], step: int, rank: int) -> dict:
        g = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + step * 101 + rank)
        return self._masked([self.corpus.train[i] for i in indices], g)

    @torch.no_grad()
    def evaluate(self, model: PretrainModel, accelerator) -> tuple[dict, float]:
        was_training = model.training
        model.eval()
        rank, world = accelerator.process_index, accelerator.num_processes
        device, bs = accelerator.device, self.cfg.eval_batch_size
        mlm, encoder = model.objectives["mlm"], model.encoder
        held = self.corpus.heldout[:self.options.eval_sequences]
        order = sorted(range(len(held)), key=lambda i: len(held[i]))[rank::world]
        loss_sum, correct, n = 0.0, 0, 0
        for start in range(0, len(order), bs):
            idx = order[start:start + bs]
            batch = self._heldout_batch(idx, device)
            hidden = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
            chosen = batch["mlm_labels"] != IGNORE
            if chosen.any():
                logits = mlm.logits(encoder, hidden[chosen])
                labels = batch["mlm_labels"][chosen]
                loss_sum += float(nn.functional.cross_entropy(logits, labels, reduction="sum"))
                correct += int((logits.argmax(-1) == labels).sum())
                n += int(labels.numel())
        log_p, tokens = self._pseudo_log_likelihood(encoder, mlm, rank, world, device)
        totals = [loss_sum, correct, n, log_p, tokens]
        if world > 1:
            from accelerate.utils import gather_object
            gathered = gather_object([totals])
            totals = [sum(t[k] for t in gathered) for k in range(5)]
        loss_sum, correct, n, log_p, tokens = totals
        model.train(was_training)
        loss = loss_sum / max(n, 1)
        metrics = {"heldout_mlm_loss": loss, "heldout_mlm_accuracy": correct / max(n, 1), "heldout_masked": n,
                   "heldout_pppl": math.exp(-log_p / max(tokens, 1)), "heldout_pppl_tokens": tokens,
                   "softmax_over": self.vocab}
        return metrics, -loss

    def _heldout_batch(self, idx: list[int], device) -> dict:
        """Held-out sequences ``idx`` masked at fixed positions: each sequence by its own generator (seeded by its
        index), so the masked positions do not depend on batching, the number of processes, or the model."""
        if not hasattr(self, "_heldout_masks"):
            self._heldout_masks = {}
        for i in idx:
            if i not in self._heldout_masks:
                one = self._masked([self.corpus.heldout[i]], torch.Generator().manual_seed(12345 + i))
                self._heldout_masks[i] = (one["input_ids"][0], one["mlm_labels"][0])
        T = max(len(self.corpus.heldout[i]) for i in idx)
        ids = torch.full((len(idx), T), self.pad, dtype=torch.long)
        labels = torch.full((len(idx), T), IGNORE, dtype=torch.long)
        attention = torch.zeros((len(idx), T), dtype=torch.long)
        for b, i in enumerate(idx):
            masked, gold = self._heldout_masks[i]
            ids[b, :len(masked)], labels[b, :len(gold)], attention[b, :len(masked)] = masked, gold, 1
        return {"input_ids": ids.to(device), "attention_mask": attention.to(device), "mlm_labels": labels.to(device)}

    def _pseudo_log_likelihood(self, encoder, mlm, rank: int, world: int, device) -> tuple[float, int]:
        """Σ log p(token_i | sequence with token_i masked) over the non-special tokens of the first
        ``pppl_sequences`` held-out sequences (this process's share)."""
        total, count = 0.0, 0
        for seq in self.corpus.heldout[:self.options.pppl_sequences][rank::world]:
            ids = torch.tensor(seq)
            positions = [i for i, t in enumerate(seq) if t not in self.specials.tolist()]
            for start in range(0, len(positions), self.cfg.eval_batch_size):
                pos = torch.tensor(positions[start:start + self.cfg.eval_batch_size])
                copies = ids.repeat(len(pos), 1)
                copies[torch.arange(len(pos)), pos] = self.mask_id
                hidden = encoder(input_ids=copies.to(device),
                                 attention_mask=torch.ones_like(copies).to(device)).last_hidden_state
                logits = mlm.logits(encoder, hidden[torch.arange(len(pos)), pos.to(device)])
                total += float(logits.log_softmax(-1)[torch.arange(len(pos)), ids[pos].to(device)].sum())
                count += len(pos)
        return total, count

    def export(self, model: PretrainModel, folder) -> dict:
        return save_mlm_head(model.objectives["mlm"], folder, self.trim, self.tokenizer.get_vocab_size())
