"""Evaluation of a translation stage (TALL): round-trip BLEU on held-out corpus lines of each language, BLEU against
human references where a parallel set is given, the share of outputs identical to their input (a model that copies
instead of translating scores high round-trip BLEU), and a few sample translations for the log.

sacreBLEU (Post 2018) with its standard tokenizers, so that scores compare with published ones: ``ja-mecab``
(MeCab + IPADIC, the ``sacrebleu[ja]`` extra) for Japanese, ``zh`` for Chinese, ``13a`` otherwise; for Japanese and
Chinese also character BLEU (``char_bleu_*``, ``roundtrip_char_bleu_*``: xlt's only BLEU there before MeCab was a
dependency).  The sentences are spread over the processes and gathered, so every process returns the same numbers.
"""
from __future__ import annotations

from pathlib import Path

import torch

from xlt.core.batching import pad_ids
from xlt.errors import ConfigError, DataError
from xlt.synthetic import decipher, parse, to_synthetic

CHARACTER_BLEU = {"ja", "zh"}  # no spaces between words: character BLEU is also reported
STANDARD_TOKENIZE = {"ja": "ja-mecab", "zh": "zh"}  # sacreBLEU's own; 13a for every other language


def bleu(hypotheses: list[str], references: list[str], lang: str, tokenize: str | None = None) -> float:
    """Corpus BLEU of ``hypotheses`` in ``lang``; ``tokenize`` a sacreBLEU tokenizer (default: the standard one for
    ``lang``, ``STANDARD_TOKENIZE``)."""
    from sacrebleu.metrics import BLEU

    if not hypotheses:
        return 0.0
    synthetic = parse(lang)
    if synthetic is not None:  # scored on the deciphered text: the base language's BLEU tokenization applies
        hypotheses = [decipher(h, synthetic.base) for h in hypotheses]
        references = [decipher(r, synthetic.base) for r in references]
        lang = synthetic.base
    metric = BLEU(tokenize=tokenize or tokenize_of(lang))
    return float(metric.corpus_score(hypotheses, [references]).score)


def tokenize_of(lang: str) -> str:
    """The sacreBLEU tokenizer ``bleu`` uses for ``lang`` by default (a synthetic language: its base's)."""
    synthetic = parse(lang)
    return STANDARD_TOKENIZE.get(synthetic.base if synthetic is not None else lang, "13a")


def read_lines(path: Path, limit: int) -> list[str]:
    """The first ``limit`` lines of a reference file, stripped (empty ones kept: the files are line-aligned)."""
    if not path.exists():
        raise DataError(f"{path}: reference file not found (options.reference)")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()[:limit]]


class TranslationEval:
    def __init__(self, stage, tokenizer, trim) -> None:
        self.stage, self.tokenizer, self.trim = stage, tokenizer, trim
        o = stage.options
        self.languages = list(o.languages)
        self.heldout = {lang: [s for s, sl in zip(stage.corpus.heldout, stage.corpus.heldout_langs) if sl == lang]
                        [:o.eval_sentences] for lang in self.languages}
        self.references: dict[str, list[tuple[str, str]]] = {}  # lang -> [(text in lang, text in languages[0])]
        base = Path(stage.cfg.corpus.data_dir)
        for lang, files in o.reference.items():
            synthetic = parse(lang)
            exact = synthetic is not None and synthetic.base == self.languages[0] and len(files) == 1
            if lang not in self.languages or (len(files) != 2 and not exact):
                raise ConfigError(f"options.reference.{lang}: expected a language of the pair {self.languages} "
                                  f"mapped to [file in {lang}, line-aligned file in {self.languages[0]}] (a "
                                  f"synthetic language: [file in its base language], its exact image the reference)")
            b = read_lines(base / files[-1], o.reference_sentences)
            a = ([to_synthetic(y, synthetic) for y in b] if exact else  # type: ignore[arg-type]
                 read_lines(base / files[0], o.reference_sentences))
            self.references[lang] = [(x, y) for x, y in zip(a, b) if x and y]

    def ids(self, text: str) -> list[int]:
        ids = list(self.tokenizer.encode(text).ids)[:self.stage.options.max_decode_length + 2]
        if self.trim is None:
            return ids
        unk = self.trim.old_to_new.get(self.tokenizer.token_to_id("<unk>"), self.stage.pad)
        return [self.trim.old_to_new.get(i, unk) for i in ids]

    def text(self, ids: list[int]) -> str:
        if self.trim is not None:
            ids = [self.trim.kept[i] for i in ids]
        return self.tokenizer.decode(ids, skip_special_tokens=True).strip()

    @torch.no_grad()
    def translate(self, model, seqs: list[list[int]], into: str, device, batch_size: int) -> list[list[int]]:
        """Id sequences (``<s> … </s>``) -> their greedy translations into ``into``, in the same form."""
        bt, encoder, decoder = model.objectives["bt"], model.encoder, model.shared["decoder"]
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        out: list[list[int]] = [[] for _ in seqs]
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            ids, mask = pad_ids([seqs[i] for i in idx], self.stage.pad)
            into_t = torch.full((len(idx),), self.stage.lang_index[into], dtype=torch.long, device=device)
            got, got_mask = bt.translate(encoder, decoder, ids.to(device), mask.to(device), into_t)
            for row, i in enumerate(idx):
                out[i] = got[row][got_mask[row].bool()].tolist()
        return out

    def __call__(self, model, accelerator) -> tuple[dict, float]:
        rank, world, device = accelerator.process_index, accelerator.num_processes, accelerator.device
        bs = self.stage.cfg.eval_batch_size
        was_training = model.training
        model.eval()
        # (name, output language, source id sequences, references or None for round trips)
        jobs: list[tuple[str, str, list[list[int]], list[str] | None]] = []
        for lang in self.languages:
            jobs.append((f"roundtrip_{lang}", self._other(lang), self.heldout[lang], None))
        for lang, pairs in self.references.items():
            src = self.languages[0]
            jobs.append((f"{src}_{lang}", lang, [self.ids(y) for _, y in pairs], [x for x, _ in pairs]))
            jobs.append((f"{lang}_{src}", src, [self.ids(x) for x, _ in pairs], [y for _, y in pairs]))
        mine: dict[str, list[tuple[int, list[int], list[int]]]] = {}
        for name, into, sources, refs in jobs:
            share = list(range(len(sources)))[rank::world]
            forward = self.translate(model, [sources[i] for i in share], into, device, bs)
            back = self.translate(model, forward, self._other(into), device, bs) if refs is None else \
                [[] for _ in share]
            mine[name] = list(zip(share, forward, back))
        if world > 1:
            from accelerate.utils import gather_object
            gathered = gather_object([mine])
            mine = {job[0]: sorted(x for part in gathered for x in part[job[0]]) for job in jobs}
        model.train(was_training)
        return self._metrics(jobs, mine)

    def _other(self, lang: str) -> str:
        return self.languages[1 - self.languages.index(lang)]

    def _metrics(self, jobs, results) -> tuple[dict, float]:
        metrics: dict = {"samples": []}
        roundtrip = []
        for name, into, sources, refs in jobs:
            rows = sorted(results[name])
            src_text = [self.text(sources[i]) for i, _, _ in rows]
            out_text = [self.text(f) for _, f, _ in rows]
            if refs is None:  # round trip: back into the source's own language, scored against the source
                lang = self._other(into)
                back_text = [self.text(b) for _, _, b in rows]
                score = bleu(back_text, src_text, lang)
                metrics[f"roundtrip_bleu_{lang}"] = score
                if lang in CHARACTER_BLEU:
                    metrics[f"roundtrip_char_bleu_{lang}"] = bleu(back_text, src_text, lang, "char")
                same = sum(a == b for a, b in zip(src_text, out_text))
                metrics[f"identical_{lang}_{into}"] = same / max(len(rows), 1)
                roundtrip.append(score)
            else:
                gold = [refs[i] for i, _, _ in rows]
                metrics[f"bleu_{name}"] = bleu(out_text, gold, into)
                if into in CHARACTER_BLEU:
                    metrics[f"char_bleu_{name}"] = bleu(out_text, gold, into, "char")
            metrics["samples"] += [f"{name}: {a} => {b}" for a, b in
                                   list(zip(src_text, out_text))[:self.stage.options.samples]]
        return metrics, sum(roundtrip) / max(len(roundtrip), 1)
