"""TreLM's encoder on tiny-random: reordering by an alignment (length and order change, placeholder for unaligned
target positions), MLM and CdLM rows through one forward pass, frozen halves get no gradient, the half-model
combination takes the right layers."""
import torch

from xlt import zoo
from xlt.models.trilayer import TreLMEncoder, alignment_order, combine_halves, reorder


def test_alignment_order_and_reorder():
    # source "<s> the red house </s> <ph>" (placeholder at 5); target "<s> la casa roja bonita </s>"
    links = [(0, 0), (1, 1), (3, 2), (2, 3), (4, 5)]  # "bonita" (target 4) is unaligned
    order = alignment_order(links, target_length=6, placeholder=5)
    assert order == [0, 1, 3, 2, 5, 4]
    hidden = torch.arange(6.0).view(1, 6, 1).expand(1, 6, 2)
    out = reorder(hidden, torch.tensor([order[:5]]))  # a different length: target positions, not source ones
    assert out.shape == (1, 5, 2) and out[0, :, 0].tolist() == [0.0, 1.0, 3.0, 2.0, 5.0]


def tiny_trelm():
    encoder, _, _ = zoo.load_encoder("tiny-random")
    return TreLMEncoder(encoder, ["en", "es"])


def test_mlm_and_cdlm_rows_in_one_model(xlt_home):
    model = tiny_trelm().eval()
    split = model.split
    assert all(torch.equal(a, b) for a, b in zip(model.trilayer.state_dict().values(),
                                                  model.bert.encoder.layer[split].state_dict().values()))
    ids = torch.randint(5, 50, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.long)
    lang = torch.tensor([0, 1])
    mlm = model(ids, mask, lang)
    assert mlm.shape == (2, 7, model.config.hidden_size)
    order = torch.tensor([[0, 2, 1, 6, 6], [0, 1, 2, 3, 4]])
    cdlm = model(ids, mask, lang, out_lang=1 - lang, order=order, order_mask=torch.tensor([[1, 1, 1, 1, 0]] * 2))
    assert cdlm.shape == (2, 5, model.config.hidden_size)
    full = torch.ones(2, 5, dtype=torch.long)
    swapped = model(ids, mask, lang, out_lang=1 - lang, order=order.flip(1), order_mask=full)
    assert not torch.allclose(cdlm[0], swapped[0])  # the order reaches the output


def test_frozen_half_gets_no_gradient(xlt_home):
    model = tiny_trelm()
    for layer in model.lower_layers():
        layer.requires_grad_(False)
    ids = torch.randint(5, 50, (2, 6))
    out = model(ids, torch.ones(2, 6, dtype=torch.long), torch.tensor([1, 1]))
    out.pow(2).mean().backward()
    assert all(p.grad is None for layer in model.lower_layers() for p in layer.parameters())
    assert all(p.grad is not None for layer in model.upper_layers() for p in layer.parameters())
    assert model.trilayer.attention.self.query.weight.grad is not None


def test_combine_halves_takes_the_right_layers(xlt_home):
    a, b = tiny_trelm(), tiny_trelm()
    with torch.no_grad():
        for p in a.parameters():
            p.fill_(1.0)
        for p in b.parameters():
            p.fill_(3.0)
    combined = combine_halves(a.state_dict(), b.state_dict(), a.split)
    for key, value in combined.items():
        if key.startswith("bert.encoder.layer."):
            index = int(key.split(".")[3])
            expected = 1.0 if index < a.split else 3.0
        else:
            expected = 2.0  # embeddings, TRILayer, language embeddings: the mean
        if value.is_floating_point():
            assert torch.all(value == expected), key


def test_backbone_batch_and_single_agree(xlt_home):
    """A padded batch gives each sentence the states it gets alone (AllenNLP's batch-vs-single check)."""
    from xlt.models.trilayer import TreLMBackbone

    backbone = TreLMBackbone(tiny_trelm(), "es").eval()
    with torch.no_grad():
        backbone.trelm.lang.weight.normal_()  # non-zero language embeddings: the check covers them too
    a, b = torch.randint(5, 50, (1, 7)), torch.randint(5, 50, (1, 4))
    batch = torch.cat([a, torch.cat([b, torch.ones(1, 3, dtype=torch.long)], 1)])
    mask = torch.tensor([[1] * 7, [1] * 4 + [0] * 3])
    with torch.no_grad():
        both = backbone(input_ids=batch, attention_mask=mask).last_hidden_state
        alone_a = backbone(input_ids=a, attention_mask=torch.ones_like(a)).last_hidden_state
        alone_b = backbone(input_ids=b, attention_mask=torch.ones_like(b)).last_hidden_state
    assert torch.allclose(both[0], alone_a[0], atol=1e-5) and torch.allclose(both[1, :4], alone_b[0], atol=1e-5)


def test_language_embeddings_start_orthogonal_as_the_paper_says(xlt_home):
    """TreLM's paper: orthogonal language embeddings (xlt started them at zeros before issue 101, which made the
    two languages the same input until training moved them)."""
    import pytest

    encoder, _, _ = zoo.load_encoder("tiny-random")
    rows = TreLMEncoder(encoder, ["en", "es"]).lang.weight.detach()
    assert torch.allclose(rows @ rows.T, torch.eye(2), atol=1e-5)
    assert torch.count_nonzero(TreLMEncoder(encoder, ["en", "es"], "zeros").lang.weight) == 0
    with pytest.raises(ValueError, match="lang_init"):
        TreLMEncoder(encoder, ["en", "es"], "ones")
