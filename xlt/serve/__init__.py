"""Using a trained model: raw text in any language in, JSON with character offsets out (``predictor``), batch files
(``batch_file``), ONNX + int8 export with a parity report (``export``) and an HTTP server (``app``).

``words``, ``decode`` and ``predictor`` import no torch: an export folder runs with onnxruntime + tokenizers only.
"""
