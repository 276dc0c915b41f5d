"""TreLM (Li et al., "Cross-lingual transfer learning for pretrained language models", ICLR 2021 submission; code
github agcbi2017/TreLM): migrate an English encoder to a new language instead of pre-training one from scratch.

1. ``prepare_base`` (``xlt.stages.trelm_base``): a new vocabulary over source + target text, its embedding matrix
   from fastText vectors aligned to the English input space (adversarial + Procrustes, MUSE), precision@1 reported;
2. the encoder becomes a ``TreLMEncoder`` (``xlt.models.trilayer``): halves, a TRILayer initialised from layer N/2,
   language embeddings;
3. phases (the shipped config ``pretrain-trelm-es``): commonality (``mlm`` on source + target text, only
   embeddings + TRILayer + head train), transfer in two directions from the commonality model (``start_from``):
   ``cdlm_s2t`` trains the upper half, ``cdlm_t2s`` the lower half, each batch CdLM rows plus target-MLM rows;
   their merge (``start_from: [t2s, s2t]``: lower half of t2s, upper half of s2t, the rest averaged); then
   language-specific training (``mlm_target``).

Evaluation (every phase, and every baseline that shares the vocabulary): subword-level bits per word of the MLM
objective on held-out target text, -log2 p(token) averaged over masked sub-tokens, with the masked positions fixed
per held-out sequence (the paper's rule: identical positions for every model on the same vocabulary); the same on
held-out source text (how much English is kept); CdLM accuracy on held-out translation pairs.  Selection value:
-target BPW.  Export: the BERT folder + ``trelm.safetensors`` (TRILayer, language embeddings) + ``trelm.json``, which
``xlt.zoo.load_encoder`` reads back as a fine-tuning backbone for the target language.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from torch import nn

from xlt.config import path_field, positive, ranged
from xlt.align.migrate_vocabulary import VocabularySettings
from xlt.core.batching import IGNORE
from xlt.core.vocab import token_id
from xlt.errors import ConfigError, DataError
from xlt.fidelity import Deviation
from xlt.losses.mlm import MaskedLanguageModel, save_mlm_head
from xlt.losses.trelm import TreLMObjective
from xlt.models.trilayer import TreLMEncoder, combine_halves
from xlt.stages import PretrainModel, Stage
from xlt.stages.trelm_data import Row, cdlm_row, collate, mlm_row, subtoken_links
from xlt.stages.unicoder_data import Interleaved

TASKS = ["mlm", "mlm_target", "cdlm_s2t", "cdlm_t2s"]


def pairs_digest(source: list[list[int]], target: list[list[int]], n_train: int) -> str:
    """Fingerprint of the tokenized translation pairs (and where train ends): equal digests, equal alignments."""
    h = hashlib.sha256(str(n_train).encode())
    for a, b in zip(source, target):
        h.update(json.dumps([a, b]).encode())
    return h.hexdigest()


@dataclass
class TreLMOptions:
    source_lang: str = "en"  # the language of the model's own vocabulary (English for MiniLM)
    target_lang: str = "es"  # the language the model migrates to
    # the new embedding rows: aligned (fastText mapped into the model, the paper), random (random rows, the layers
    # kept) or scratch (every weight random)
    init: Literal["aligned", "random", "scratch"] = "aligned"
    base_from: str = path_field()  # RUN_DIR/base of an earlier TreLM run: its vocabulary (and, with init aligned, its weights)
    test_dictionary: str = "muse/en-es.5000-6500.txt"  # MUSE's test split, under corpus.data_dir
    candidate_dictionary: str = "muse/en-es.0-5000.txt"  # its English words: the retrieval candidates
    vocabulary: VocabularySettings = field(default_factory=VocabularySettings)
    mask_prob: float = ranged(0.15, above=0, high=1)  # share of tokens masked for MLM and CdLM
    mlm_rows_per_cdlm_row: float = 1.0  # target-MLM rows added to each CdLM batch (the unified formulation)
    eval_sequences: int = 1000  # held-out sequences per language for BPW
    eval_pairs: int = 500  # held-out pairs per CdLM direction
    bucket_size: int = positive(50)  # batches per length-sorted bucket (dynamic padding)
    # the language embeddings' start: orthogonal rows (the paper); zeros (xlt's earlier default); normal (N(0, 0.02),
    # the authors' code, which leaves them to BERT's init)
    lang_init: Literal["orthogonal", "zeros", "normal"] = "orthogonal"


class TreLM(Stage):
    name = "trelm"
    description = "TreLM: migrate an English encoder to a new language (aligned embeddings, TRILayer, CdLM)"
    paper = "Li et al. 2021 (TreLM, ICLR submission); Conneau et al. 2018 (MUSE)"
    Options = TreLMOptions
    fidelity = (
        Deviation("language embeddings", "orthogonal initialisation", "orthogonal (options.lang_init); zeros in the "
                  "runs before it (the authors' code leaves them to BERT's N(0, 0.02))", "fixed", "trelm_lang_init"),
        Deviation("what the claim is measured against", "the migrated model against one trained from scratch "
                  "and against mBERT", "the migrated, the un-migrated (the English MiniLM as it is, its own "
                  "vocabulary) and the from-scratch model, fine-tuned on scarce target labels (data.train_subset)",
                  "open: with 300 Spanish labels the migrated model (orthogonal language embeddings, held-out es "
                  "BPW 7.43 as 7.44 with zeros) gives es intent / slot F1 / semantic 95.3 / 73.6 / 66.2 (2 seeds), "
                  "the un-migrated English MiniLM 95.8 / 74.0 / 66.6 (3 seeds): no gain over the model it came "
                  "from; with 1000 labels un-migrated 97.5 / 80.9 / 75.6; the migrated 1000-label and "
                  "the from-scratch scarce-label rows not run yet", "trelm_scarce_labels"),
    )
    grows_synthetic_vocabulary = False

    @classmethod
    def prepare_base(cls, cfg) -> Path:
        from xlt.stages.trelm_base import prepare_trelm_base
        return prepare_trelm_base(cfg)

    def __init__(self, cfg, tokenizer, corpus, trim) -> None:
        super().__init__(cfg, tokenizer, corpus, trim)
        o = self.options
        if trim is not None:
            raise ConfigError("stage trelm builds its own vocabulary: set model.trim_vocab=false")
        self.languages = [o.source_lang, o.target_lang]
        for part, langs in (("train", corpus.train_langs), ("heldout", corpus.heldout_langs)):
            unknown = sorted(set(langs) - set(self.languages))
            if unknown:
                raise ConfigError(f"corpus: {part} text in {unknown}; TreLM reads only {self.languages} "
                                  f"(name files under corpus.langs)")
        for phase in cfg.phases:  # a wrong merge is a config error before any training
            if len(phase.start_from) > 1:
                self._merge_sources(phase.start_from, phase.name)
        self.used = [t for t in TASKS if any(t in p.objectives for p in cfg.phases)]
        ids = {t: token_id(tokenizer, *names) for t, names in
               (("cls", ("[CLS]", "<s>")), ("sep", ("[SEP]", "</s>")), ("pad", ("[PAD]", "<pad>")),
                ("mask", ("[MASK]", "<mask>")))}
        self.pad, self.mask_id = ids["pad"], ids["mask"]
        self.specials = torch.tensor(sorted(set(ids.values())))
        self.vocab = tokenizer.get_vocab_size()
        lang_index = {lang: i for i, lang in enumerate(self.languages)}
        self.train_lang = [lang_index[x] for x in corpus.train_langs]
        self.heldout_lang = [lang_index[x] for x in corpus.heldout_langs]
        self.target_train = [i for i, x in enumerate(self.train_lang) if x == 1]
        self.pairs = self.heldout_pairs = None
        if {"cdlm_s2t", "cdlm_t2s"} & set(self.used):
            self._read_pairs()

    # ---- data ------------------------------------------------------------------------------------------------------
    def _read_pairs(self) -> None:
        from accelerate import PartialState

        from xlt import zoo
        from xlt.data.parallel import load_parallel
        from xlt.stages.trelm_base import base_folder

        if list(self.cfg.corpus.parallel) != [self.options.target_lang]:
            raise ConfigError(f"corpus.parallel must name translation pairs of {self.options.target_lang} only "
                              f"(CdLM), got {sorted(self.cfg.corpus.parallel) or 'none'}")
        p = load_parallel(self.cfg.corpus, self.tokenizer, base_folder(self.cfg) / "tokenizer.json",
                          zoo.xlt_home() / "corpora")
        if not len(p.train) or not len(p.heldout):
            raise DataError(f"corpus.parallel: {len(p.train)} training and {len(p.heldout)} held-out pairs")
        self.pairs, self.heldout_pairs, self.pair_report = p.train, p.heldout, p.report
        path = self.cfg.run_dir / "cdlm_alignments.json"
        state = PartialState()  # the process group run_stage's accelerator set up (one process outside a launcher)
        if state.is_main_process and not path.exists():  # an existing file is kept so a resumed run reorders alike
            self._write_links(p, path)
        # one eflomal fit, by the main process: every process reads the same links, so the shards of one batch are
        # reordered alike (fits in several processes could differ, and raced on one file)
        state.wait_for_everyone()
        saved = json.loads(path.read_text())
        self.pair_report["cdlm_alignments"] = saved.get("source", "eflomal fit")
        self.links = [[tuple(x) for x in one] for one in saved["train"]]
        self.heldout_links = [[tuple(x) for x in one] for one in saved["heldout"]]

    def _write_links(self, p, path: Path) -> None:
        """Sub-token links of every training and held-out pair: one eflomal fit over all of them (no labels
        involved), or the links of the run whose vocabulary this one shares when it aligned the very same pairs."""
        both_src, both_tgt = p.train.english + p.heldout.english, p.train.other + p.heldout.other
        digest = pairs_digest(both_src, both_tgt, len(p.train))
        shared = Path(self.options.base_from).parent / "cdlm_alignments.json" if self.options.base_from else None
        theirs = json.loads(shared.read_text()) if shared is not None and shared.exists() else {}
        if theirs.get("pairs_digest") == digest:  # identical CdLM reorderings for both models, eflomal fitted once
            saved = {**theirs, "source": f"reused from {shared}"}
        else:
            links = subtoken_links(both_src, both_tgt, self.tokenizer.id_to_token)
            saved = {"pairs_digest": digest, "source": "eflomal fit", "train": links[:len(p.train)],
                     "heldout": links[len(p.train):]}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(saved))
        tmp.replace(path)  # whole or not at all: a run killed while writing fits again on resume

    def _sizes(self, task: str) -> list[int]:
        if task == "mlm":
            return [len(s) for s in self.corpus.train]
        if task == "mlm_target":
            return [len(self.corpus.train[i]) for i in self.target_train]
        return [len(a) + len(b) for a, b in zip(self.pairs.english, self.pairs.other)]

    def batches(self, phase, epoch: int) -> list[list[int]]:
        for task in phase.objectives:
            if task not in TASKS:
                raise ConfigError(f"phase {phase.name}: no objective {task} (stage trelm has {TASKS})")
            if not self._sizes(task):
                raise DataError(f"phase {phase.name}: objective {task} has no training examples")
        plan = Interleaved(list(phase.objectives), {t: self._sizes(t) for t in phase.objectives}, TASKS)
        return plan.batches(phase.batch_size, self.options.bucket_size, self.cfg.seed, epoch)

    def _mlm_partner(self, pair: int) -> int:
        """The target-MLM sequence that joins a CdLM pair's batch: fixed per pair (so ``count`` is exact)."""
        return self.target_train[(pair * 2654435761) % len(self.target_train)]

    def _extra_mlm(self, idx: list[int]) -> list[int]:
        n = round(len(idx) * self.options.mlm_rows_per_cdlm_row)
        return [self._mlm_partner(i) for i in idx[:n]] if self.target_train else []

    def count(self, indices: list[int]) -> tuple[int, int]:
        task, idx = Interleaved([], {}, TASKS).decode(indices)
        if task.startswith("cdlm"):
            extra = self._extra_mlm(idx)
            return (sum(len(self.pairs.english[i]) + len(self.pairs.other[i]) for i in idx)
                    + sum(len(self.corpus.train[i]) for i in extra), len(idx) + len(extra))
        seqs = [self.corpus.train[self.target_train[i] if task == "mlm_target" else i] for i in idx]
        return sum(map(len, seqs)), len(seqs)

    def _mlm(self, seq_index: int, heldout: bool, generator: torch.Generator) -> Row:
        seqs, langs = (self.corpus.heldout, self.heldout_lang) if heldout else (self.corpus.train, self.train_lang)
        return mlm_row(seqs[seq_index], langs[seq_index], self.specials, self.mask_id, self.vocab, generator,
                       self.options.mask_prob)

    def _cdlm(self, task: str, pair: int, heldout: bool) -> Row:
        pairs, links = (self.heldout_pairs, self.heldout_links) if heldout else (self.pairs, self.links)
        specials = set(self.specials.tolist())
        if task == "cdlm_s2t":
            return cdlm_row(pairs.english[pair], pairs.other[pair], links[pair], 0, 1, self.mask_id, specials)
        flipped = [(t, s) for s, t in links[pair]]
        return cdlm_row(pairs.other[pair], pairs.english[pair], flipped, 1, 0, self.mask_id, specials)

    def make_batch(self, objective: str, indices: list[int], step: int, rank: int) -> dict:
        task, idx = Interleaved([], {}, TASKS).decode(indices)  # the batch's own objective, whatever the step

        def gen(k: int) -> torch.Generator:
            return torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + step * 101 + rank * 7 + k * 1_000_000_007)

        if task.startswith("cdlm"):
            rows = [self._cdlm(task, i, heldout=False) for i in idx]
            rows += [self._mlm(s, False, gen(k)) for k, s in enumerate(self._extra_mlm(idx))]
        else:
            seqs = [self.target_train[i] for i in idx] if task == "mlm_target" else idx
            rows = [self._mlm(s, False, gen(k)) for k, s in enumerate(seqs)]
        return {"objective": task, **collate(rows, self.pad)}

    # ---- model -----------------------------------------------------------------------------------------------------
    def wrap_encoder(self, encoder: nn.Module) -> nn.Module:
        return TreLMEncoder(encoder, self.languages, self.options.lang_init)

    def export_encoder(self, encoder: nn.Module) -> nn.Module:
        return encoder.bert

    def shared_modules(self, encoder: nn.Module) -> dict[str, nn.Module]:
        c = encoder.config
        return {"lm_head": MaskedLanguageModel.for_encoder(c).resize(self.vocab)}

    def objectives(self, encoder: nn.Module) -> dict[str, nn.Module]:
        return {t: TreLMObjective(t) for t in TASKS}

    def _merge_sources(self, names: list[str], phase_name: str) -> tuple[str, str]:
        """(lower-half phase, upper-half phase) of a merge: the one trained on ``cdlm_t2s``, the one on ``cdlm_s2t``."""
        by_name = {p.name: p for p in self.cfg.phases}
        lower = [n for n in names if "cdlm_t2s" in by_name[n].objectives]
        upper = [n for n in names if "cdlm_s2t" in by_name[n].objectives]
        if len(names) != 2 or len(lower) != 1 or len(upper) != 1 or lower == upper:
            raise ConfigError(f"phases[{phase_name}].start_from: TreLM merges one phase trained on cdlm_t2s (lower "
                              f"half) and one trained on cdlm_s2t (upper half), got {list(names)}")
        return lower[0], upper[0]

    def merge_states(self, states: dict[str, dict[str, torch.Tensor]], phase) -> dict[str, torch.Tensor]:
        """Lower half from the phase that trained ``cdlm_t2s``, upper half from the one that trained ``cdlm_s2t``,
        the rest averaged (``combine_halves``)."""
        lower, upper = self._merge_sources(list(states), phase.name)
        prefix = "encoder.bert.encoder.layer."
        layers = {int(k[len(prefix):].split(".", 1)[0]) for k in states[lower] if k.startswith(prefix)}
        return combine_halves(states[lower], states[upper], len(layers) // 2)

    # ---- evaluation and export -------------------------------------------------------------------------------------
    @torch.no_grad()
    def evaluate(self, model: PretrainModel, accelerator) -> tuple[dict, float]:
        was_training = model.training
        model.eval()
        rank, world, device = accelerator.process_index, accelerator.num_processes, accelerator.device
        bs, o = self.cfg.eval_batch_size, self.options
        groups: dict[str, list[Row]] = {}
        for lang_index, lang in enumerate(self.languages):
            chosen = [i for i, x in enumerate(self.heldout_lang) if x == lang_index][:o.eval_sequences]
            # the masked positions of held-out sequence i depend on i only: the same for every model and run
            groups[f"{lang}_mlm"] = [self._mlm(i, True, torch.Generator().manual_seed(12345 + i)) for i in chosen]
        if self.heldout_pairs is not None:
            for task in ("cdlm_s2t", "cdlm_t2s"):
                n = min(len(self.heldout_pairs), o.eval_pairs)
                groups[task] = [self._cdlm(task, i, heldout=True) for i in range(n)]
        encoder, head = model.encoder, model.shared["lm_head"]
        totals = {}
        for name, rows in groups.items():
            mine = sorted(rows, key=lambda r: len(r.input_ids))[rank::world]
            nll = correct = count = 0.0
            for start in range(0, len(mine), bs):
                batch = {k: v.to(device) for k, v in collate(mine[start:start + bs], self.pad).items()}
                hidden = encoder(batch["input_ids"], batch["attention_mask"], batch["lang"],
                                 out_lang=batch["out_lang"], order=batch["order"], order_mask=batch["order_mask"])
                chosen = batch["labels"] != IGNORE
                logits = head.logits(encoder, hidden[chosen])
                labels = batch["labels"][chosen]
                nll += float(nn.functional.cross_entropy(logits, labels, reduction="sum"))
                correct += int((logits.argmax(-1) == labels).sum())
                count += int(labels.numel())
            totals[name] = [nll, correct, count]
        if world > 1:
            from accelerate.utils import gather_object
            gathered = gather_object([totals])
            totals = {t: [sum(g[t][k] for g in gathered) for k in range(3)] for t in totals}
        model.train(was_training)
        metrics = {}
        for name, (nll, correct, count) in totals.items():
            metrics[f"heldout_{name}_accuracy"] = correct / max(count, 1)
            metrics[f"heldout_{name}_tokens"] = int(count)
            if name.endswith("_mlm"):
                metrics[f"heldout_{name[:-4]}_bpw"] = nll / max(count, 1) / math.log(2)
            else:
                metrics[f"heldout_{name}_loss"] = nll / max(count, 1)
        return metrics, -metrics[f"heldout_{o.target_lang}_bpw"]

    def export(self, model: PretrainModel, folder) -> dict:
        from safetensors.torch import save_file

        encoder = model.encoder
        state = {f"trilayer.{k}": v for k, v in encoder.trilayer.state_dict().items()}
        state["lang.weight"] = encoder.lang.weight
        save_file({k: v.detach().cpu().contiguous() for k, v in state.items()}, str(folder / "trelm.safetensors"))
        (folder / "trelm.json").write_text(json.dumps({"languages": self.languages, "split": encoder.split,
                                                       "fine_tune_language": self.options.target_lang}))
        from xlt.stages.trelm_base import base_folder

        migration = base_folder(self.cfg) / "migration.json"
        return {**save_mlm_head(model.shared["lm_head"], folder, None, self.vocab), "trelm": "trelm.safetensors",
                "languages": self.languages, "migration": json.loads(migration.read_text())
                if migration.exists() else None, "pairs": getattr(self, "pair_report", None)}
