"""The HTTP server's limits (``xlt serve --max-texts ...``): one dataclass whose field ranges check the command-line
flags and the limits a worker process reads back (no web framework imported here: ``xlt --help`` lists them)."""
from __future__ import annotations

from dataclasses import dataclass

from xlt.settings import check_ranges, positive, ranged


@dataclass
class Limits:
    """The server's limits; ``xlt serve`` takes each as a flag (``--max-wait-ms``), checked against these ranges."""
    max_texts: int = positive(64)  # texts per request (413 above)
    max_chars: int = positive(2000)  # characters per text (413 above)
    max_body_bytes: int = positive(262_144)  # request body size, counted as it arrives (413 above)
    max_batch: int = positive(64)  # texts the micro-batcher joins into one batch
    max_wait_ms: float = ranged(5.0, 0, 10_000)  # how long a batch waits for more requests (0: not at all)

    def __post_init__(self) -> None:
        check_ranges(self, "limits")
