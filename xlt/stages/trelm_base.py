"""The folder a TreLM run starts from (``RUN_DIR/base``, built once, before the corpora are tokenized): the English
model with a new vocabulary for source + target text and a new input-embedding matrix (TreLM step 1,
``xlt.align.migrate_vocabulary``), or, for the baselines and ablations that share an earlier run's vocabulary
(``options.base_from``), that vocabulary with other weights:

- ``init: aligned``   the embedding rows are the target-trained fastText vectors mapped into the English model's
                       input space (adversarial + Procrustes, MUSE); every other weight is the English model's;
- ``init: random``    the same vocabulary, embedding rows drawn at random (std = the model's initializer_range),
                       the English layers kept (the paper's "random initialisation" ablation);
- ``init: scratch``   the same vocabulary and architecture, every weight random (the "pre-trained from scratch with
                       limited data" baseline).

The fastText vectors and the vocabulary are trained on the training part of ``corpus.langs`` only: the held-out
lines (BPW) are never seen.  ``base/migration.json`` reports the word-translation precision@1 of each alignment
step, the fastText corpus and the time taken.
"""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import torch

from xlt.errors import ConfigError


def base_folder(cfg) -> Path:
    o = cfg.options
    if o.base_from and o.init == "aligned":
        return Path(o.base_from)
    return cfg.run_dir / "base"


def train_text(cfg, folder: Path) -> dict[str, Path]:
    """The training lines of each language of ``corpus.langs`` (held-out tail of each file left out), one file per
    language under ``folder``."""
    from xlt.data.corpora import corpus_files, language_lines

    out: dict[str, Path] = {}
    for path, lang in corpus_files(cfg.corpus):
        lines = language_lines(path, lang, cfg.corpus)[0]  # syn-en: the English file re-written
        keep = lines[:len(lines) - cfg.corpus.heldout_lines] if cfg.corpus.heldout_lines else lines
        out.setdefault(lang, folder / f"{lang}.txt")
        with open(out[lang], "a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in keep))
    return out


def dictionary_pairs(target_lang: str, dictionary: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(target word, English word) pairs to score the alignment on.  A synthetic target (``syn-en``) is scored on
    the true bijection: each English word of the dictionary with its exact image, whatever the dictionary's other
    side says."""
    from xlt.synthetic import parse, to_synthetic

    synthetic = parse(target_lang)
    if synthetic is None:
        return [(target, english) for english, target in dictionary]
    english_words = list(dict.fromkeys(english for english, _ in dictionary))
    return [(to_synthetic(english, synthetic), english) for english in english_words]


def true_piece_translation(target_lang: str):
    """A synthetic target's exact piece -> English piece map (``##`` continuation kept, lower-cased as the English
    side of a TreLM vocabulary is); None for a real language."""
    from xlt.synthetic import decipher, parse

    synthetic = parse(target_lang)
    if synthetic is None:
        return None

    def translate(piece: str) -> str:
        prefix = "##" if piece.startswith("##") else ""
        return prefix + decipher(piece[len(prefix):], synthetic.base).lower()
    return translate


def _save(model, tokenizer_folder: Path | None, tokenizer, out: Path, report: dict) -> Path:
    tmp = out.with_name(out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    model.save_pretrained(str(tmp), safe_serialization=True)
    if tokenizer is not None:
        tokenizer.save(str(tmp / "tokenizer.json"))
    else:
        shutil.copyfile(tokenizer_folder / "tokenizer.json", tmp / "tokenizer.json")
    (tmp / "migration.json").write_text(json.dumps(report, indent=1, ensure_ascii=False))
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def _bert_with_vocabulary(english_folder: Path, vocab_size: int, pad_id: int, keep_layers: bool):
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(str(english_folder), local_files_only=True)
    config.vocab_size, config.pad_token_id = vocab_size, pad_id
    model = AutoModel.from_config(config, add_pooling_layer=False)
    if keep_layers:
        english = AutoModel.from_pretrained(str(english_folder), add_pooling_layer=False, local_files_only=True)
        state = {k: v for k, v in english.state_dict().items() if "word_embeddings" not in k}
        missing, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and all("word_embeddings" in k for k in missing), (missing, unexpected)
    return model


def prepare_trelm_base(cfg) -> Path:
    """Build (or find) the run's base folder; see the module docstring."""
    from xlt import zoo
    from xlt.align.migrate_vocabulary import migrate_vocabulary, read_dictionary
    from xlt.align.subword_vectors import token_counts

    o = cfg.options
    out = base_folder(cfg)
    if o.init != "aligned" and not o.base_from:
        raise ConfigError(f"options.init={o.init} reuses another run's vocabulary: set options.base_from to that "
                          f"run's base folder (RUN_DIR/base)")
    if (out / "config.json").exists():
        return out  # built by an earlier (interrupted) run, or the shared base of options.base_from
    english_folder = zoo.resolve(cfg.model.name)
    start = time.time()
    if o.base_from:
        shared = Path(o.base_from)
        if not (shared / "tokenizer.json").exists():
            raise ConfigError(f"options.base_from={shared}: no tokenizer.json there (expected RUN_DIR/base of a "
                              f"TreLM run)")
        tokenizer = zoo.load_tokenizer(shared)
        model = _bert_with_vocabulary(english_folder, tokenizer.get_vocab_size(), tokenizer.token_to_id("[PAD]"),
                                      keep_layers=o.init == "random")
        return _save(model, shared, None, out, {"init": o.init, "vocabulary_from": str(shared),
                                                "seconds": time.time() - start})
    missing = [lang for lang in (o.source_lang, o.target_lang) if lang not in cfg.corpus.langs]
    if missing:
        raise ConfigError(f"corpus.langs has no {missing}: TreLM trains its vocabulary and fastText vectors on the "
                          f"source and target text named there")
    data = Path(cfg.corpus.data_dir)
    test = dictionary_pairs(o.target_lang, read_dictionary(data / o.test_dictionary))
    candidates = [english for english, _ in read_dictionary(data / o.candidate_dictionary)]
    work = out.with_name(out.name + ".text")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    text = train_text(cfg, work)
    english_tokenizer = zoo.load_tokenizer(english_folder)
    english, _, _ = zoo.load_encoder(str(english_folder))
    embeddings = english.get_input_embeddings().weight.detach()
    frequency = torch.zeros(embeddings.shape[0])  # of each English-model row in the English text
    counts = token_counts(english_tokenizer, [text[o.source_lang]], o.vocabulary.max_lines)[:len(frequency)]
    frequency[:len(counts)] = counts
    tokenizer, matrix, report = migrate_vocabulary([text[o.source_lang]], [text[o.target_lang]], english_tokenizer,
                                                   embeddings, test, candidates, o.vocabulary, frequency,
                                                   true_translation=true_piece_translation(o.target_lang))
    model = _bert_with_vocabulary(english_folder, tokenizer.get_vocab_size(), tokenizer.token_to_id("[PAD]"),
                                  keep_layers=True)
    model.get_input_embeddings().weight.data.copy_(matrix)
    report = {"init": "aligned", "english_model": cfg.model.name, "test_dictionary": o.test_dictionary,
              "candidate_dictionary": o.candidate_dictionary, **report, "seconds": time.time() - start}
    saved = _save(model, None, tokenizer, out, report)
    shutil.rmtree(work, ignore_errors=True)
    return saved
