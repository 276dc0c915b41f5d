"""Collation and the shared cross-entropy, value by value: what a batch holds for a known set of items, and the loss
that replaced reduction="mean" (it must give the same bits, forward and gradient, so committed runs reproduce)."""
import pytest
import torch

from tests.host_syncs import HostSyncs
from xlt.core.batching import IGNORE, Encoded, collate, pad_ids
from xlt.tasks import TASKS
from xlt.tasks.words import cross_entropy, word_label_tensor


def _items() -> list[Encoded]:
    short = Encoded([0, 5, 6, 2], word_positions=[1, 2], labels={"intent": 1, "slots": [3, 4]})
    long = Encoded([0, 7, 8, 9, 10, 2], word_positions=[1, 3, 4], labels={"intent": 0, "slots": [1, 0, 2]})
    short.pair = Encoded([0, 11, 2], word_positions=[1], labels={"intent": 1, "slots": [3]})
    long.pair = Encoded([0, 12, 13, 2], word_positions=[1, 2], labels={"intent": 0, "slots": [1, 1]})
    return [short, long]


def test_collate_pads_every_field_and_nests_the_pair():
    batch = collate(TASKS.get("intent_slot")(), _items(), pad_id=1)
    assert batch["input_ids"].tolist() == [[0, 5, 6, 2, 1, 1], [0, 7, 8, 9, 10, 2]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1, 1, 0, 0], [1] * 6]
    assert batch["word_positions"].tolist() == [[1, 2, 0], [1, 3, 4]]
    assert batch["word_mask"].tolist() == [[True, True, False], [True, True, True]]
    assert batch["slot_labels"].tolist() == [[IGNORE, 3, 4, IGNORE, IGNORE, IGNORE], [IGNORE, 1, IGNORE, 0, 2, IGNORE]]
    assert batch["intent_labels"].tolist() == [1, 0]
    assert {k: v.dtype for k, v in batch.items() if k != "pair"} == {
        "input_ids": torch.long, "attention_mask": torch.long, "word_positions": torch.long,
        "word_mask": torch.bool, "slot_labels": torch.long, "intent_labels": torch.long}
    pair = batch["pair"]
    assert pair["input_ids"].tolist() == [[0, 11, 2, 1], [0, 12, 13, 2]]
    assert pair["slot_labels"].tolist() == [[IGNORE, 3, IGNORE, IGNORE], [IGNORE, 1, 1, IGNORE]]


def test_word_labels_must_match_the_words():
    bad = Encoded([0, 5, 2], word_positions=[1], labels={"slots": [3, 4]})
    with pytest.raises(ValueError):
        word_label_tensor([bad], "slots", 3)


def test_pad_ids():
    ids, mask = pad_ids([[4], [5, 6, 7]], pad=9)
    assert ids.tolist() == [[4, 9, 9], [5, 6, 7]] and mask.tolist() == [[1, 0, 0], [1, 1, 1]]


@pytest.mark.parametrize("seed", range(20))
def test_cross_entropy_is_bitwise_the_mean_over_labelled_rows(seed):
    g = torch.Generator().manual_seed(seed)
    n, c = int(torch.randint(1, 2000, (), generator=g)), int(torch.randint(2, 100, (), generator=g))
    logits = torch.randn(n, c, generator=g) * 3
    labels = torch.randint(0, c, (n,), generator=g)
    labels[torch.rand(n, generator=g) < 0.5] = IGNORE
    labels[0] = 0  # at least one labelled row
    ours, ref = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    a = cross_entropy(ours, labels)
    b = torch.nn.functional.cross_entropy(ref, labels, ignore_index=IGNORE)
    a.backward()
    b.backward()
    assert torch.equal(a, b) and torch.equal(ours.grad, ref.grad)


def test_cross_entropy_without_labelled_rows_is_zero_with_zero_gradient():
    logits = torch.randn(4, 3, requires_grad=True)
    loss = cross_entropy(logits, torch.full((4,), IGNORE))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(logits.grad, torch.zeros(4, 3))


def test_host_sync_detector_sees_each_kind_of_read_and_the_loss_makes_none():
    x = torch.tensor([1, 2, 3])
    with HostSyncs() as syncs:
        x.tolist()
        bool(x.any())
        x[x > 1]
        x.sum().item()
    assert sum(syncs.sites.values()) == 4 and all(site.startswith(__file__) for site in syncs.sites)
    logits, labels = torch.randn(6, 4, requires_grad=True), torch.tensor([0, IGNORE, 2, 3, IGNORE, 1])
    with HostSyncs() as syncs:
        cross_entropy(logits, labels).backward()
    assert not syncs.sites


def test_static_lengths_pad_to_the_smallest_length_that_holds_the_batch():
    batch = collate(TASKS.get("intent_slot")(), _items(), pad_id=1, static_lengths=(4, 8, 16))
    assert batch["input_ids"].tolist() == [[0, 5, 6, 2, 1, 1, 1, 1], [0, 7, 8, 9, 10, 2, 1, 1]]
    assert batch["attention_mask"].sum().item() == 10
    assert batch["word_positions"].shape == (2, 4) and batch["word_mask"].sum().item() == 5
    assert batch["slot_labels"].shape == (2, 8) and (batch["slot_labels"][:, 6:] == IGNORE).all()
    assert batch["pair"]["input_ids"].shape == (2, 4)  # 4 holds the translations' longest exactly
    longer = collate(TASKS.get("intent_slot")(), _items(), pad_id=1, static_lengths=(2, 4))
    assert longer["input_ids"].shape == (2, 6)  # longer than every static length: its own longest


def test_static_padding_leaves_the_loss_and_its_gradient_as_they_were(served):
    """Pads carry no attention and no loss: the trained tiny model's loss and gradients on a batch padded to a
    static length equal those of the same batch padded to its longest item (eval mode: no dropout draws)."""
    from xlt.trained import load_trained

    run = load_trained(served["run"])
    g = torch.Generator().manual_seed(0)
    n_words, vocab = [3, 5, 2], run.model.encoder.get_input_embeddings().num_embeddings
    items = [Encoded([0] + torch.randint(5, vocab, (n,), generator=g).tolist() + [2],
                     word_positions=list(range(1, n + 1)),
                     labels={"intent": i % len(run.labels["intents"]),
                             "slots": [(i + j) % len(run.labels["slots"]) for j in range(n)]})
             for i, n in enumerate(n_words)]
    results = []
    for lengths in ((), (16, 32)):
        run.model.zero_grad()
        batch = collate(run.ctx.task, items, run.pad, lengths)
        assert batch["input_ids"].shape[1] == (16 if lengths else 7)
        loss = run.method.loss(run.model, batch)["loss"]
        loss.backward()
        grads = torch.cat([p.grad.flatten() for p in run.model.parameters() if p.grad is not None])
        results.append((loss.detach(), grads))
    assert torch.allclose(results[0][0], results[1][0], atol=1e-5)
    assert torch.allclose(results[0][1], results[1][1], atol=1e-5)


def test_a_run_trains_on_static_lengths_and_refuses_unordered_ones(tiny_cfg):
    from xlt.errors import ConfigError
    from xlt.finetune import train

    run = train(tiny_cfg("name=static", "train.static_lengths=[8,16,64]", "train.max_steps=2", "train.eval_every=2"))
    assert (run / "best" / "model.safetensors").exists()
    with pytest.raises(ConfigError, match="static_lengths"):
        tiny_cfg("train.static_lengths=[64,16]")
