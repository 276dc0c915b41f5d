"""int8 quantization of an exported graph whose answers do not depend on the batch: per-token dynamic activations.

onnxruntime's ``quantize_dynamic`` computes ONE activation scale per tensor at run time (``DynamicQuantizeLinear``):
the scale of a padded batch spans every text in it, padding included, so a text's answer changed with what it was
batched with (issue 48).  Static quantization (fixed scales from a calibration pass) is batch-invariant but lost
4.6 slot-F1 points on the xSID dev set with e5-small (the GELU outputs feeding each FFN's second layer have outlier
channels a single fixed scale cannot hold), and leaving those layers in fp32 left no speed gain.

Here every ``MatMul`` with a constant weight ``W`` (K, N) becomes, for its input ``x`` (..., K) read as rows
``X`` (M, K), one row per token:

    s_x = max|X[m, :]| / 127   (M, 1)   -- per token, so no other token (neighbour or padding) enters it
    q_x = round(X / s_x)                int8
    s_w = max|W[:, n]| / 63    (N,)     -- per output channel, fixed at export; 7-bit: q_w in -63..63
    y   = (q_x @ q_w) * s_x * s_w       MatMulInteger (int32, exact) -> float

i.e. symmetric per-token activations (as ZeroQuant / LLM.int8 use) with symmetric per-channel weights.  Integer
products are exact and every scale belongs to one token, so a token's output is the same in any batch.
Activations are stored as uint8 with the zero point 128 (QuantizeLinear's unsigned form), weights as int8 with 7 bits
(the weight comment below says why).
"""
from __future__ import annotations

from pathlib import Path

WEIGHT_MAX = 63  # 7-bit weights: the largest |q_w| (the comment in quantize_per_token says why)

INT8_SCHEME = ("int8 MatMuls: weights symmetric per output channel (fixed at export), activations symmetric per "
               "token (computed at run time from that token alone: batch-invariant). Trade-off, measured by "
               "benchmarks/serving.py (docs/benchmarks/serving.md): at batch 32 on 2 CPU threads about twice the fp32 "
               "graph's speed on an AVX-512 CPU, 1.1-1.2x fp32 on AVX2 without VNNI (7-bit weights, so uint8 x int8 "
               "products are exact there too); accuracy within half a point of fp32; onnxruntime's dynamic int8 is "
               "faster but its answers change with what a text is batched with")


def quantize_per_token(src: Path, dst: Path) -> int:
    """Write ``dst``: ``src`` with every constant-weight MatMul int8 (per-token activations, per-channel weights).
    Returns how many MatMuls were quantized."""
    import numpy as np  # here, not at module level: the CLI reads INT8_SCHEME for its help without numpy
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    new_nodes, count, quantized = [], 0, {}
    new_inits = [numpy_helper.from_array(np.array(1e-8 * 127, dtype=np.float32), "xlt_q/eps"),
                 numpy_helper.from_array(np.array(127.0, dtype=np.float32), "xlt_q/127"),
                 numpy_helper.from_array(np.array([0], dtype=np.int64), "xlt_q/zero"),
                 numpy_helper.from_array(np.array([-1], dtype=np.int64), "xlt_q/last"),
                 numpy_helper.from_array(np.array(128, dtype=np.uint8), "xlt_q/zp128")]
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2:
            new_nodes.append(node)
            continue
        count += 1
        p = f"xlt_q/{count}"
        weight = numpy_helper.to_array(w).astype(np.float32)  # (K, N)
        k, n = weight.shape
        # 7 bits (-63..63, as onnxruntime's reduce_range): on AVX2 without VNNI the u8 x s8 kernel sums pairs of
        # products in int16, which saturates with 8-bit weights (up to 2 x 255 x 127 > 2^15; onnxruntime's
        # "saturation" note; it moved a logit by 0.33 on such a CPU) and cannot with 7 (2 x 255 x 63 < 2^15).
        # u8 x s8 is the fast kernel everywhere (VNNI's vpdpbusd); storing weights as uint8 (u8 x u8, exact with 8
        # bits) was 17 % slower at batch 32 on AVX2 (121.2 against 145.8 utt/s, docs/benchmarks/serving.md)
        w_scale = np.maximum(np.abs(weight).max(axis=0), 1e-8) / WEIGHT_MAX  # (N,)
        q_w = np.clip(np.round(weight / w_scale), -WEIGHT_MAX, WEIGHT_MAX).astype(np.int8)
        new_inits += [numpy_helper.from_array(q_w, f"{p}/w_int8"),
                      numpy_helper.from_array(w_scale.astype(np.float32), f"{p}/w_scale"),
                      numpy_helper.from_array(np.array([n], dtype=np.int64), f"{p}/n")]
        x, y = node.input[0], node.output[0]
        if x not in quantized:  # one quantization per input: the Q, K and V projections of a layer share it
            quantized[x] = f"xlt_q/in{len(quantized) + 1}"
            q = quantized[x]
            new_inits.append(numpy_helper.from_array(np.array([-1, k], dtype=np.int64), f"{q}/rows_shape"))
            new_nodes += [
                helper.make_node("Reshape", [x, f"{q}/rows_shape"], [f"{q}/rows"]),  # (M, K)
                helper.make_node("Abs", [f"{q}/rows"], [f"{q}/abs"]),
                helper.make_node("ReduceMax", [f"{q}/abs"], [f"{q}/absmax"], axes=[1], keepdims=0),  # (M,)
                helper.make_node("Max", [f"{q}/absmax", "xlt_q/eps"], [f"{q}/absmax_safe"]),
                helper.make_node("Div", [f"{q}/absmax_safe", "xlt_q/127"], [f"{q}/x_scale"]),  # (M,)
                # uint8 with the zero point 128: round(X / s_x) + 128, the same integers shifted;
                # QuantizeLinear per axis 0 = one scale per row
                helper.make_node("Shape", [f"{q}/x_scale"], [f"{q}/m"]),
                helper.make_node("Expand", ["xlt_q/zp128", f"{q}/m"], [f"{q}/x_zero"]),
                helper.make_node("QuantizeLinear", [f"{q}/rows", f"{q}/x_scale", f"{q}/x_zero"], [f"{q}/x_uint8"],
                                 axis=0),
                helper.make_node("Shape", [x], [f"{q}/x_shape"]),  # (..., K): the output is (..., N)
                helper.make_node("Slice", [f"{q}/x_shape", "xlt_q/zero", "xlt_q/last"], [f"{q}/lead"]),
            ]
        q = quantized[x]
        new_nodes += [
            helper.make_node("MatMulInteger", [f"{q}/x_uint8", f"{p}/w_int8", "xlt_q/zp128"],
                             [f"{p}/acc"]),  # int32, exact
            helper.make_node("DequantizeLinear", [f"{p}/acc", f"{q}/x_scale"], [f"{p}/y_rows_x"], axis=0),
            helper.make_node("Mul", [f"{p}/y_rows_x", f"{p}/w_scale"], [f"{p}/y_rows"]),
            helper.make_node("Concat", [f"{q}/lead", f"{p}/n"], [f"{p}/y_shape"], axis=0),
            helper.make_node("Reshape", [f"{p}/y_rows", f"{p}/y_shape"], [y]),
        ]
    used = {i for nd in new_nodes for i in nd.input}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.node[:]
    graph.node.extend(new_nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + [t for t in new_inits if t.name in used])
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return count
