"""Same input, same answer: an exported model's answer to a text does not depend on what it is batched with (issue
48: dynamic int8 quantization computed activation scales over the whole padded batch, so a neighbour could flip an
intent)."""
import pytest

from xlt.serve.predictor import Request

TEXTS = ["set an alarm for 7 am", "明日の朝七時にアラームを設定して", "Stell einen Wecker für morgen, bitte!",
         "weather", "what is the weather in berlin tomorrow morning and will it rain in the afternoon or not",
         "明天早上七点的闹钟", "play some music", "東京の明日の天気を教えて", "wake me up at six thirty please",
         "rain tomorrow?", "Wetter in Paris", "set alarm"]


def mixed_texts(n: int) -> list[str]:
    """``n`` texts of mixed languages and lengths (each distinct)."""
    return [f"{TEXTS[i % len(TEXTS)]}{' again' * (i // len(TEXTS))}" for i in range(n)]


def answers(predictor, texts: list[str], batch_size: int) -> list[dict]:
    predictor.batch_size = batch_size
    try:
        return predictor.predict([Request([t]) for t in texts])
    finally:
        predictor.batch_size = 32


@pytest.mark.parametrize("graph", ["default", "model.onnx"])
def test_an_answer_does_not_depend_on_its_batch(served, graph):
    from xlt.serve.predictor import OnnxPredictor

    predictor = OnnxPredictor(served["export"], None if graph == "default" else graph)
    texts = mixed_texts(140)
    alone = [answers(predictor, [t], 1)[0] for t in texts[:40]] + answers(predictor, texts[40:], 1)
    for batch in (32, 128):
        together = answers(predictor, texts, batch)
        for a, b in zip(alone, together):
            assert a["intent"] == b["intent"] and a["slots"] == b["slots"], (graph, batch, a["text"])
            assert max(abs(a["intent_probs"][k] - b["intent_probs"].get(k, 0.0)) for k in a["intent_probs"]) < 1e-4


def test_the_default_graph_is_int8_with_per_token_scales(served):
    """The int8 graph the export serves by default has no DynamicQuantizeLinear (one scale for a whole batch) and
    says in /info how it is quantized."""
    import onnx

    info = served["int8"].info
    ops = {n.op_type for n in onnx.load(str(served["export"] / info["graph"])).graph.node}
    assert info["graph"] == "model.int8.onnx" and "MatMulInteger" in ops and "DynamicQuantizeLinear" not in ops
    assert "per token" in info["quantization"] and served["onnx"].info["quantization"] == "none (fp32)"


def test_per_token_int8_is_close_to_fp32(served):
    """The export's parity report (dev set): int8 logits within a small margin of PyTorch's (the tiny random model's
    logits are nearly flat, so its predictions are no measure; benchmarks/serving.py measures the real model)."""
    assert served["report"]["model.int8.onnx"]["max_abs_logit_diff"] < 0.05


def test_int8_weights_have_seven_bits(served):
    """Every MatMulInteger multiplies uint8 activations by int8 weights within -63..63: the pair sums of onnxruntime's
    u8 x s8 kernel on AVX2 without VNNI (int16) cannot saturate (2 x 255 x 63 < 2^15), on any CPU."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(served["export"] / "model.int8.onnx")).graph
    weights = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    matmuls = [n for n in graph.node if n.op_type == "MatMulInteger"]
    assert matmuls
    for node in matmuls:
        w = weights[node.input[1]]
        assert w.dtype.name == "int8" and int(abs(w.astype(int)).max()) <= 63, node.input[1]
        assert len(node.input) == 3 or not node.input[3], "weights are symmetric: no weight zero point"
