"""``xlt serve``: the HTTP server (FastAPI + uvicorn).

- ``POST /predict`` ``{"text": "..."} | {"texts": ["...", ...]}`` (a sentence pair: ``["first", "second"]``), optional
  ``"lang"`` -> ``{"predictions": [...]}``, one JSON answer per text (``xlt.serve.decode.to_json``);
- ``GET /health``; ``GET /info`` (model, task, labels, languages evaluated with their test metrics, limits);
  OpenAPI docs at ``/docs``.

Limits, each answered with a 4xx and ``{"error": ..., "limit": NAME, "max": N}``: ``max_body_bytes`` (413),
``max_texts`` per request (413), ``max_chars`` per text (413); a text the model cannot take (empty, a pair that is
not two texts, too long a pair, a lone surrogate) is 422 naming it; malformed JSON, invalid UTF-8, JSON nested too
deeply, a wrong schema or an unknown key is 422.  Every error, 404 and 405 included, is ``{"error": ...}``.

Micro-batching: requests from concurrent clients wait in one queue; a single worker takes what is there (up to
``max_batch`` texts, waiting at most ``max_wait_ms`` for more) and predicts it as one length-bucketed batch in a
thread, so throughput grows with load while a lone request waits only ``max_wait_ms``.
"""
from __future__ import annotations

import asyncio
import os
from contextlib import asynccontextmanager
from dataclasses import asdict

from fastapi import FastAPI, Request as HttpRequest
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from xlt.serve.limits import Limits
from xlt.serve.predictor import Predictor, Request
from xlt.serve.words import InputError


class PredictBody(BaseModel):
    model_config = ConfigDict(extra="forbid")  # an unknown key (a typo of "texts", say) is a 422, not ignored
    text: str | list[str] | None = None
    texts: list[str | list[str]] | None = None
    lang: str | None = None


class LimitExceeded(Exception):
    def __init__(self, message: str, limit: str, value: int) -> None:
        super().__init__(message)
        self.limit, self.value = limit, value


class MicroBatcher:
    """Collects prepared inputs from concurrent requests into shared batches."""

    def __init__(self, predictor: Predictor, limits: Limits) -> None:
        self.predictor, self.limits = predictor, limits
        self.queue: asyncio.Queue = asyncio.Queue()
        self.batches = self.items = 0

    async def submit(self, requests: list[Request]) -> list[dict]:
        future = asyncio.get_running_loop().create_future()
        await self.queue.put((requests, future))
        return await future

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            jobs = [await self.queue.get()]
            size = len(jobs[0][0])
            deadline = loop.time() + self.limits.max_wait_ms / 1000
            while size < self.limits.max_batch:
                timeout = deadline - loop.time()
                if timeout <= 0:
                    break
                try:
                    job = await asyncio.wait_for(self.queue.get(), timeout)
                except asyncio.TimeoutError:
                    break
                jobs.append(job)
                size += len(job[0])
            flat = [r for reqs, _ in jobs for r in reqs]
            try:
                answers = await loop.run_in_executor(None, self.predictor.predict, flat, "record")
            except Exception as err:  # noqa: BLE001 - a failed batch must answer its requests, not hang them
                for _, future in jobs:
                    if not future.done():
                        future.set_exception(err)
                continue
            self.batches, self.items = self.batches + 1, self.items + len(flat)
            start = 0
            for reqs, future in jobs:
                if not future.done():
                    future.set_result(answers[start:start + len(reqs)])
                start += len(reqs)


def _error(status: int, message: str, **extra) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": message, **extra})


class BodyLimit:
    """ASGI middleware: a request body is counted as its chunks arrive, and one over ``max_bytes`` (declared by its
    Content-Length, or streamed without one) is answered 413 at once, without reading the rest (the connection is
    closed).  A body within the limit is handed on whole, so the server never holds more than ``max_bytes`` of it."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.max_bytes:
            return await self._refuse(scope, receive, send, f"request body is {int(declared)} bytes")
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                return await self._refuse(scope, receive, send, f"request body is over {self.max_bytes} bytes")
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body, delivered = b"".join(chunks), False

        async def replay():
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    async def _refuse(self, scope, receive, send, what: str) -> None:
        response = _error(413, f"{what}; the limit is {self.max_bytes}", limit="max_body_bytes", max=self.max_bytes)
        response.headers["connection"] = "close"  # the rest of the body is not read
        await response(scope, receive, send)


def create_app(predictor: Predictor, limits: Limits | None = None) -> FastAPI:
    limits = limits or Limits()
    batcher = MicroBatcher(predictor, limits)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        worker = asyncio.create_task(batcher.run())
        yield
        worker.cancel()

    app = FastAPI(title="xlt", description=f"{predictor.info.get('task')} model {predictor.info.get('model')} "
                  f"({predictor.backend})", lifespan=lifespan)

    app.add_middleware(BodyLimit, max_bytes=limits.max_body_bytes)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: HttpRequest, err: RequestValidationError):
        where = "; ".join(f"{'.'.join(str(x) for x in e.get('loc', ()))}: {e.get('msg')}" for e in err.errors()[:3])
        return _error(422, f"malformed request: {where}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: HttpRequest, err: StarletteHTTPException):
        # FastAPI answers a body it cannot parse (invalid UTF-8, JSON nested too deeply) with 400 {"detail"}: one
        # error shape everywhere, and a request the server cannot read is a malformed one (422)
        if err.status_code == 400:
            return _error(422, f"malformed request: the body is not readable JSON ({err.detail}; invalid UTF-8, or "
                          f"nested too deeply?)")
        return _error(err.status_code, str(err.detail))

    @app.exception_handler(LimitExceeded)
    async def too_big(request: HttpRequest, err: LimitExceeded):
        return _error(413, str(err), limit=err.limit, max=err.value)

    @app.exception_handler(InputError)
    async def bad_input(request: HttpRequest, err: InputError):
        return _error(422, str(err))

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "backend": predictor.backend}

    @app.get("/info")
    async def info() -> dict:
        return {**predictor.info, "limits": asdict(limits), "batches": batcher.batches,
                "texts_predicted": batcher.items}

    @app.post("/predict")
    async def predict(body: PredictBody) -> JSONResponse:
        if (body.text is None) == (body.texts is None):
            raise InputError("give exactly one of \"text\" or \"texts\"")
        values = [body.text] if body.text is not None else body.texts
        if not values:
            raise InputError("\"texts\" is empty")
        if len(values) > limits.max_texts:
            raise LimitExceeded(f"{len(values)} texts in one request; the limit is {limits.max_texts}",
                                "max_texts", limits.max_texts)
        requests = []
        for i, value in enumerate(values):
            for part in ([value] if isinstance(value, str) else value):
                if len(part) > limits.max_chars:
                    raise LimitExceeded(f"texts[{i}] is {len(part)} characters; the limit is {limits.max_chars}",
                                        "max_chars", limits.max_chars)
            requests.append(Request.of(value, body.lang, predictor.pair))
        # inputs are checked and encoded once, in the batch's worker thread (not here, on the event loop); a text
        # the model cannot take comes back as its answer's error
        answers = await batcher.submit(requests)
        for i, answer in enumerate(answers):
            if "error" in answer:
                raise InputError(f"texts[{i}]: {answer['error']}")
        # the answers are plain JSON types already: dumped as they are, not walked again by FastAPI's encoder
        return JSONResponse({"predictions": answers})

    return app


def app_from_env() -> FastAPI:
    """The app of one uvicorn worker process (``--workers N``): the model and limits come from the environment."""
    import json

    from xlt.serve.loader import load_predictor

    predictor = load_predictor(os.environ["XLT_SERVE_PATH"], os.environ.get("XLT_SERVE_GRAPH") or None,
                               spinning=False)  # the event loop and HTTP share the cores with the graph
    return create_app(predictor, Limits(**json.loads(os.environ.get("XLT_SERVE_LIMITS", "{}"))))
