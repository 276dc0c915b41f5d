"""Docs pages made from the committed benchmark results: the fidelity page (each method's and stage's fidelity
table and the study's measurements) and Choosing a method (needs, cost, measured gains, the decision guide)."""
from __future__ import annotations

import results  # scripts/docgen/results.py: the one reader of benchmarks/results

# how each deviation's rows in results/fidelity.json are shown (a docgen marker; shown once the rows exist)
FIDELITY_TABLES = {
    "tall_readout": "<!-- xlt:pivot file=fidelity metric=intent_acc,slot_f1,semantic_acc "
                    "where=deviation:tall_readout|baseline,dataset:xsid by=pair,variant langs=en,ja,de -->\n\n"
                    "<!-- xlt:rows file=fidelity where=deviation:tall_readout,method:tall_pretrain "
                    "columns=lang,bleu,bleu_tokenize,char_bleu,roundtrip_bleu,steps,train_seconds -->",
    "tall_memory": "<!-- xlt:rows file=tall-copy-probe where=step:300 columns=variant,heldout_token_accuracy,"
                   "heldout_loss,seconds -->\n\n<!-- xlt:rows file=fidelity where=deviation:tall_memory,"
                   "method:tall_pretrain columns=variant,lang,bleu,roundtrip_bleu,identical_rate,steps,"
                   "train_seconds -->\n\n<!-- xlt:pivot file=fidelity metric=intent_acc,slot_f1 "
                   "where=deviation:tall_memory,dataset:xsid by=method,variant langs=en,syn-en -->",
    "tall_what_trains": "<!-- xlt:rows file=fidelity where=deviation:tall_what_trains|tall_memory,method:tall_pretrain,"
                        "variant:all_parameters_from_the_start|bridge_rows_memory_layer_3_encoder_positions_next_dae_"
                        "1500 columns=variant,lang,bleu,roundtrip_bleu,steps,train_seconds -->",
    "filter_layers": "<!-- xlt:pivot file=fidelity metric=intent_acc,slot_f1 where=deviation:filter_layers,"
                     "dataset:mtod by=variant langs=en,es -->\n\n<!-- xlt:pivot file=fidelity metric=accuracy "
                     "where=deviation:filter_layers,dataset:pawsx by=variant langs=en,es -->",
    "xeroalign_scale": "<!-- xlt:pivot file=fidelity metric=intent_acc,slot_f1 "
                       "where=deviation:xeroalign_scale,dataset:xsid by=variant langs=summary -->\n\n"
                       "<!-- xlt:pivot file=fidelity metric=align_task_grad_ratio_first_window,"
                       "align_task_grad_ratio_last_window where=deviation:xeroalign_scale,dataset:xsid by=variant "
                       "langs=en split=training -->\n\n"
                       "<!-- xlt:pivot file=fidelity metric=accuracy "
                       "where=deviation:xeroalign_scale,dataset:pawsx by=variant langs=en,es -->",
    "unicoder_optimisation": "<!-- xlt:pivot file=fidelity metric=retrieval_top1 where=deviation:unicoder_"
                             "optimisation,method:probe,dataset:xnli by=variant avg=seen:de|es|tr|zh split=dev -->\n\n"
                             "<!-- xlt:pivot file=fidelity metric=retrieval_top1 where=deviation:unicoder_"
                             "optimisation,method:probe,dataset:xsid by=variant avg=seen:de|ja|tr|zh split=dev -->\n\n"
                             "<!-- xlt:pivot file=fidelity metric=accuracy where=deviation:unicoder_optimisation,"
                             "dataset:xnli,method:zero_shot by=variant langs=en,de,es,tr,zh -->\n\n"
                             "<!-- xlt:pivot file=fidelity metric=intent_acc,slot_f1 where=deviation:"
                             "unicoder_optimisation,dataset:xsid,method:zero_shot by=variant langs=en,de,ja,tr,zh -->",
    "trelm_scarce_labels": "<!-- xlt:pivot file=fidelity metric=intent_acc,slot_f1,semantic_acc "
                           "where=deviation:trelm_scarce_labels,dataset:mtod by=train_subset,variant langs=es -->",
}


def fidelity_page() -> str:
    """benchmarks/fidelity.md: each method's and stage's fidelity table, and the measurements of the studies."""
    from xlt.fidelity import markdown_table
    from xlt.methods import METHODS
    from xlt.stages import STAGES

    measured = {r.get("deviation") for r in _rows_or_none("fidelity")} | {"tall_memory"}
    parts = ["# Fidelity to the papers\n",
             "Each method and stage of xlt against its paper (and, where the paper is silent, the authors' code): "
             "what the paper does, what xlt does, and what is measured. The tables come from the code "
             "(`fidelity` on each class, `xlt/fidelity.py`); the measurements from "
             "`benchmarks/studies/fidelity.yaml` (`python benchmarks/study.py fidelity`), checkpoints chosen on "
             "the **English dev set**.\n"]
    seen = set()
    for kind, registry in (("method", METHODS), ("stage", STAGES)):
        for name, cls in registry.items():
            if not cls.fidelity or cls.fidelity in seen:
                continue
            seen.add(cls.fidelity)
            parts.append(f"## {name} ({kind}) — {cls.paper}\n\n{markdown_table(cls.fidelity)}")
            for key in dict.fromkeys(d.key for d in cls.fidelity if d.key in measured and d.key in FIDELITY_TABLES):
                shown = [m for m in FIDELITY_TABLES[key].split("\n\n") if _renders(m)]
                if shown:
                    parts.append(f"Measured (`{key}`):\n\n" + "\n\n".join(shown) + "\n")
    return "\n".join(parts)


def _renders(marker: str) -> bool:
    """Whether a results marker has rows to show yet (a study's table appears once its rows are measured)."""
    kind, params = results.MARKER.search(marker).groups()
    try:
        (results.pivot if kind == "pivot" else results.rows_table)(results.parse(params))
    except results.MarkerError:
        return False
    return True


def _rows_or_none(name: str) -> list[dict]:
    try:
        return results.load(name)["rows"]
    except results.MarkerError:
        return []


def choosing_page() -> str:
    """methods/choosing.md: each method's needs, training cost and measured gains (xlt/methods/measured.json, the
    same table as ``xlt methods``), and per task the method that gained most."""
    from xlt.methods import METHODS
    from xlt.methods.measured import cost_text, gain_text, measured

    data = measured()
    by = {(r["method"], r["task"]): r for r in data["rows"]}
    head = "| method | needs | training cost | " + " | ".join(data["tasks"]) + " |"
    rows = [head, "|---" * (3 + len(data["tasks"])) + "|"]
    for name, cls in sorted(METHODS.items(), key=lambda item: item[0] != "zero_shot"):
        cost = "1×" if name == "zero_shot" else cost_text(data, name).replace("x", "×")
        gains = ["0" if name == "zero_shot" else gain_text(by.get((name, t))) for t in data["tasks"]]
        rows.append(f"| [{name}]({name}.md) | {cls.needs} | {cost} | " + " | ".join(gains) + " |")
    best = []
    for task in data["tasks"]:
        mine = [r for r in data["rows"] if r["task"] == task]
        top = max(mine, key=lambda r: list(r["gain"].values())[-1])
        metric = list(top["gain"])[-1]
        zs = top["zero_shot"][metric]
        verdict = (f"**{top['method']}**, {top['gain'][metric]:+.1f} {metric} over zero-shot's {zs:.1f}"
                   if top["gain"][metric] >= 1.0 else f"none by a point or more ({metric}: zero-shot {zs:.1f}; "
                   f"best {top['method']} {top['gain'][metric]:+.1f})")
        best.append(f"- {task}: {verdict} ({top['seeds']} seeds).")
    return "\n".join([
        "# Choosing a method\n",
        "What each method needs beyond labelled source-language data, what its training costs, and what it gained "
        "over zero-shot on the test set of one target language per task, in points (mean over the seeds both ran; "
        "checkpoints chosen on the English dev set; intent + slot tasks: intent accuracy / slot F1). The same "
        "table in a terminal: `xlt methods`. Generated from the committed benchmark results "
        "(`xlt/methods/measured.json`, written by `python scripts/method_gains.py`).\n",
        "\n".join(rows) + "\n",
        "Where the most was gained (last metric of each task):\n", "\n".join(best) + "\n",
        "## Which one\n",
        "- **No translator for your target language**: `zero_shot`. A pre-training [stage](../stages/index.md) "
        "adapts the encoder with unlabelled text only.",
        "- **A translator, used once at training time**: `translate_train` (labelled translations; token labels "
        "cross by word alignment), `xeroalign` (unlabelled translations), `multi_language` (several languages at "
        "once).",
        "- **A translator at prediction time too** (every input is translated, so it adds its latency to each "
        "request): `translate_test`, `filter`, `filter_self_teaching`.",
        "- Sentence-level labels (intents, sentence pairs) cross a translation unchanged; word-level labels (slots, "
        "entities, tags) need word alignment, which loses spans: compare the slot and NER columns above.",
        few_shot_text() + "\n",
    ])


DATASET_NAMES = {"xsid": "xSID", "mtod": "MTOD"}


def few_shot_text() -> str:
    """The decision guide's line on labelled target examples: slot F1 by number of shots per language (mean over
    the languages given shots and the seeds run), from benchmarks/results/few-shot.json."""
    from xlt.methods import METHODS

    rows = _rows_or_none("few-shot")
    shot_langs = {"xsid": ("de", "ja", "kk"), "mtod": ("es",)}
    refusing = ", ".join(f"`{name}`" for name, cls in sorted(METHODS.items()) if not cls.takes_target_shots)
    parts = []
    for dataset, langs in shot_langs.items():
        mine = [r for r in rows if r.get("dataset") == dataset and r.get("lang") in langs and "slot_f1" in r]
        by_shots = {}
        for r in mine:
            by_shots.setdefault(int(r["shots"]), []).append(100 * r["slot_f1"])
        if 0 not in by_shots or len(by_shots) < 2:
            continue
        seeds = len({r["seed"] for r in mine})
        means = ", ".join(f"{n}: {sum(v) / len(v):.1f}" for n, v in sorted(by_shots.items()))
        parts.append(f"{DATASET_NAMES[dataset]} {'/'.join(langs)} slot F1 by shots per language {means} ({seeds} "
                     f"seed{'s' if seeds > 1 else ''})")
    measured_text = f" Measured: {'; '.join(parts)} ([details](../benchmarks/few-shot.md))." if parts else ""
    return ("- **A few labelled target examples** (tens per language): `data.target_shots` adds them to the training "
            f"set of any method but those that train on paired inputs or a decoder ({refusing}); the run is then no "
            "longer zero-shot." + measured_text)
