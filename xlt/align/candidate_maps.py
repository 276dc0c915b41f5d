"""The candidate maps between two embedding spaces that TreLM's vocabulary migration chooses from (MUSE's adversarial
game, its identical-strings seed, VecMap's similarity seed, each refined by Procrustes), shared by the direct map
into the English model's embeddings (``xlt.align.migrate_vocabulary``) and the fastText bridge
(``xlt.align.fasttext_bridge``)."""
from __future__ import annotations

import torch

from xlt.align.embedding_map import adversarial_map, procrustes, refine
from xlt.align.vecmap import similarity_seed
from xlt.errors import ConfigError

# the map each ``alignment`` setting initialises from
CHOSEN = {"adversarial": "adversarial+procrustes", "identical_strings": "identical_strings+procrustes",
          "similarity_seed": "similarity_seed+procrustes"}


def candidate_maps(source_space: torch.Tensor, target_space: torch.Tensor, anchors: torch.Tensor, s,
                   log=print) -> tuple[dict[str, torch.Tensor], dict]:
    """Every map of the (normalised, most frequent first) source rows onto the target rows: MUSE's adversarial game
    and its Procrustes refinement (skipped when ``adversarial.epochs`` is 0), MUSE's identical-strings seed (the
    ``anchors`` (n, 2)) and its refinement, VecMap's similarity seed and its refinement.  Returns (name -> W, logs)."""
    maps, report = {}, {}
    if s.adversarial.epochs > 0:
        maps["adversarial"], report["adversarial"] = adversarial_map(source_space, target_space, s.adversarial, log)
        maps["adversarial+procrustes"], report["refinement"] = refine(source_space, target_space, maps["adversarial"],
                                                                      s.refinement_iterations)
    elif s.alignment == "adversarial":
        raise ConfigError("vocabulary.alignment=adversarial needs vocabulary.adversarial.epochs > 0")
    dim = source_space.shape[1]
    maps["identical_strings"] = procrustes(source_space, target_space, anchors) if len(anchors) else torch.eye(dim)
    maps["identical_strings+procrustes"], report["identical_strings_refinement"] = refine(
        source_space, target_space, maps["identical_strings"], s.refinement_iterations)
    seed = similarity_seed(source_space, target_space, s.seed_words)
    maps["similarity_seed"] = procrustes(source_space, target_space, seed)
    maps["similarity_seed+procrustes"], report["similarity_seed_refinement"] = refine(
        source_space, target_space, maps["similarity_seed"], s.refinement_iterations)
    return maps, report
