"""The load and fault test of ``benchmarks/serving.py``: a real ``xlt serve`` process on 127.0.0.1 only.

1. 1, 16, 32 and 64 concurrent clients in turn (threads, one keep-alive connection each) send one valid utterance
   per request for ``seconds``; every answer must be 200 with one prediction, equal to that text's answer asked alone;
   latency per request, throughput, and the server's RSS sampled every second (memory must stay flat: the last
   quarter's mean vs the first quarter's).
2. A burst: bad requests (body over the limit, too many texts, a text over the character limit, malformed JSON, a
   wrong schema, an empty text) mixed with valid ones from several threads; each bad one must get its 4xx.
3. The server is killed (SIGKILL) and started again; the same utterances must get identical answers.
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

BAD = {  # name -> (body bytes, expected status)
    "oversize_body": (b'{"text": "' + b"a " * 200_000 + b'"}', 413),
    "too_many_texts": (json.dumps({"texts": ["set an alarm"] * 65}).encode(), 413),
    "text_over_max_chars": (json.dumps({"text": "alarm " * 400}).encode(), 413),
    "malformed_json": (b'{"texts": ["set an alarm",', 422),
    "wrong_schema": (json.dumps({"texts": 7}).encode(), 422),
    "empty_text": (json.dumps({"texts": ["set an alarm", ""]}).encode(), 422),
    "lone_surrogate": (b'{"texts": ["set an alarm", "a \\ud800"]}', 422),
    "invalid_utf8": (b'{"text": "a \xff\xfe b"}', 422),
    "json_5000_deep": (b"[" * 5000 + b"]" * 5000, 422),
    "unknown_key": (json.dumps({"texts": ["set an alarm"], "foo": 1}).encode(), 422),
}


def start_server(path: Path, port: int, graph: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "xlt.cli", "serve", str(path), "--port", str(port), "--graph",
                             graph], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if _request(port, "GET", "/health")[0] == 200:
                return proc
        except OSError:
            time.sleep(0.5)
    raise SystemExit("server did not start in 300 s")


def _request(port: int, method: str, path: str, body: bytes | None = None,
             conn: http.client.HTTPConnection | None = None) -> tuple[int, bytes]:
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"content-type": "application/json"} if body is not None else {}
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    if own:
        conn.close()
    return response.status, data


def reference_answers(port: int, texts: list[str]) -> dict[str, str]:
    """Each text's answer asked alone, one request at a time (a batch of one), as JSON."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    return {t: json.dumps(json.loads(_request(port, "POST", "/predict", json.dumps({"text": t}).encode(), conn)[1])
                          ["predictions"][0], sort_keys=True) for t in dict.fromkeys(texts)}


def load_phase(port: int, texts: list[str], clients: int, seconds: float, pid: int,
               reference: dict[str, str] | None = None) -> dict:
    """``clients`` threads, one keep-alive connection each, one utterance per request for ``seconds``; with
    ``reference``, every answer must equal the text's batch-of-one answer (micro-batching may not change one)."""
    latencies: list[float] = []
    failures: list[str] = []
    differing: list[str] = []
    lock = threading.Lock()
    stop = time.time() + seconds

    def client(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        i = k
        while time.time() < stop:
            body = json.dumps({"text": texts[i % len(texts)]}).encode()
            t0 = time.perf_counter()
            try:
                status, data = _request(port, "POST", "/predict", body, conn)
                ok = status == 200 and len(json.loads(data)["predictions"]) == 1
                problem = "" if ok else f"status {status}: {data[:200]!r}"
                text = texts[i % len(texts)]
                if ok and reference is not None and reference.get(text) != json.dumps(
                        json.loads(data)["predictions"][0], sort_keys=True):
                    with lock:
                        differing.append(text)
            except Exception as err:  # noqa: BLE001 - every failure of a valid request is counted
                problem = repr(err)
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            with lock:
                latencies.append(time.perf_counter() - t0) if not problem else failures.append(problem)
            i += clients

    rss: list[float] = []
    server = psutil.Process(pid)
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        rss.append(server.memory_info().rss / 2**20)
        time.sleep(1)
    wall = time.time() - t0
    quarter = max(1, len(rss) // 4)
    lat = sorted(latencies)
    return {"clients": clients, "seconds": round(wall, 1), "valid_requests": len(latencies) + len(failures),
            "failed_valid_requests": len(failures), "failures_first": failures[:3],
            **({"answers_differing_from_batch_of_one": len(differing)} if reference is not None else {}),
            "utterances_per_second": round(len(latencies) / wall, 1),
            "latency_ms_p50": round(1000 * lat[len(lat) // 2], 1),
            "latency_ms_p99": round(1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))], 1),
            "rss_mb_first_quarter": round(statistics.mean(rss[:quarter]), 1),
            "rss_mb_last_quarter": round(statistics.mean(rss[-quarter:]), 1), "rss_mb_max": round(max(rss), 1)}


def burst_phase(port: int, texts: list[str], rounds: int = 10) -> dict:
    outcomes: dict[str, list[int]] = {name: [] for name in BAD}
    valid: list[int] = []
    lock = threading.Lock()

    def sender(k: int) -> None:
        for r in range(rounds):
            for name, (body, _) in BAD.items():
                status = _request(port, "POST", "/predict", body)[0]
                good = _request(port, "POST", "/predict", json.dumps({"text": texts[(k * rounds + r) % len(texts)]})
                                .encode())[0]
                with lock:
                    outcomes[name].append(status)
                    valid.append(good)

    threads = [threading.Thread(target=sender, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wrong = {name: sorted(set(s for s in got if s != BAD[name][1])) for name, got in outcomes.items()}
    return {"bad_requests": sum(len(v) for v in outcomes.values()),
            "rejected_bad_requests": sum(s == BAD[n][1] for n, got in outcomes.items() for s in got),
            "wrong_status": {n: w for n, w in wrong.items() if w}, "expected_status": {n: s for n, (_, s) in BAD.items()},
            "valid_requests_in_burst": len(valid), "failed_valid_requests_in_burst": sum(s != 200 for s in valid)}


def run_load_test(export: Path, texts: list[str], graph: str, port: int = 8765, clients: tuple = (1, 16, 32, 64),
                  seconds: float = 60) -> list[dict]:
    """A row per number of clients (each phase ``seconds``; every answer checked against the text's batch-of-one
    answer), the burst and restart results on the last row."""
    probe = json.dumps({"texts": texts[:16]}).encode()
    texts = texts[:300]  # the utterances the clients cycle through, each with its reference answer
    server = start_server(export, port, graph)
    try:
        before = _request(port, "POST", "/predict", probe)[1]
        reference = reference_answers(port, texts)
        rows = [load_phase(port, texts, n, seconds, server.pid, reference) for n in clients]
        burst = burst_phase(port, texts)
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
    server = start_server(export, port, graph)
    try:
        after = _request(port, "POST", "/predict", probe)[1]
    finally:
        server.terminate()
        server.wait()
    rows[-1] |= {**burst, "restart_identical_predictions": before == after}
    return [{**r, "graph": graph} for r in rows]
