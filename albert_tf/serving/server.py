"""`run(settings)`: the export served over TF Serving's REST API, on KServe's model server.

KServe's Python server (FastAPI on uvicorn) gives the application: its V1
protocol is TF Serving's predict API (`POST /v1/models/NAME:predict`), its
DataPlane decodes bodies and routes them to the model, `/metrics` exports
Prometheus' registry. Added here, as TF Serving has them:

    GET  /v1/models/NAME[/versions/N]            version status (AVAILABLE)
    GET  /v1/models/NAME[/versions/N]/metadata   the signatures (SignatureDefMap)
    POST /v1/models/NAME/versions/N:predict      predict on that version, if served

and the limits: the body limit (`limits.Limits`), the bounded queue (503),
the deadline (504). SIGTERM (and Ctrl-C) stop accepting connections, answer
every request already accepted (for at most --shutdown_timeout_s) and exit 0.
"""

import asyncio
import contextlib
import logging
import os
import signal
import sys
import warnings
from http import HTTPStatus

from albert_tf.serving import versions

log = logging.getLogger("albert_tf.serve")


@contextlib.contextmanager
def _kserve_argv():
    """KServe's model_server module parses sys.argv when imported; it gets none of ours."""
    saved = sys.argv
    sys.argv = saved[:1]
    try:
        yield
    finally:
        sys.argv = saved


def model_name(settings, root, fixed):
    """--model_name, else the export root's folder name."""
    if settings.model_name:
        return settings.model_name
    folder = os.path.dirname(os.path.normpath(root)) if fixed else root
    return os.path.basename(os.path.normpath(folder)) or "model"


def run(settings):
    """Serves until SIGTERM or Ctrl-C; returns once every accepted request is answered."""
    root, fixed = versions.resolve(settings.model)
    from albert_tf.serving.control import read_token

    tokens = {"admin": settings.enable_model_control
              and read_token(settings.admin_token_file, "--admin_token_file"),
              "api": settings.api_token_file
              and read_token(settings.api_token_file, "--api_token_file")}
    with _kserve_argv():
        try:
            from kserve.model_server import app
        except ImportError as e:
            raise ValueError(f"albert-tf serve needs kserve ({e}): pip install --no-deps -r "
                             "requirements-serve.txt") from None

        from albert_tf.serving.model import ExportModel

    # Bound before the seconds a model takes to load, and held: a second server on
    # the port fails here, naming it, not after printing that it serves.
    listening = _listen(settings.host, settings.port)
    model = ExportModel(model_name(settings, root, fixed), root, fixed, settings)
    model.load()
    rest_server = _rest_server(app, model, settings, tokens)
    print(f"serving {model.name} version {model.current.version} ({model.current.folder}) on "
          f"http://{settings.host}:{settings.port}/v1/models/{model.name}", flush=True)
    # uvicorn handles SIGTERM and SIGINT while it serves, then raises the signal again
    # under the handler found before: make that one harmless, so the exit status is 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    asyncio.run(_serve(rest_server, model, listening))


def _listen(host, port):
    import socket

    try:
        return socket.create_server((host, port), backlog=2048)
    except OSError as e:
        raise ValueError(f"--host/--port: cannot listen on {host}:{port} ({e.strerror})") from None


def _rest_server(app, model, settings, tokens):
    from kserve.constants.constants import FASTAPI_APP_IMPORT_STRING
    from kserve.model_repository import ModelRepository
    from kserve.protocol.dataplane import DataPlane
    from kserve.protocol.model_repository_extension import ModelRepositoryExtension
    from kserve.protocol.rest.server import RESTServer, metrics_handler

    from albert_tf.serving import connections, control

    for name in ("kserve", "kserve.trace", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger("uvicorn.error").addFilter(connections.RefusalLog())
    warnings.filterwarnings("ignore", "ORJSONResponse is deprecated")  # KServe's answers
    repository = ModelRepository()
    repository.update(model)
    dataplane = DataPlane(model_registry=repository)
    _add_tf_serving_routes(app, repository, dataplane, tokens["api"] or None)

    class Server(RESTServer):
        def _add_middlewares(self, app):
            """None of KServe's: its timing middleware logs two `getrusage` calls a request
            to a logger that is off (about a third of a small request's time in the event
            loop); the metrics that matter are `Limits`' and KServe's model histograms."""

        def _register_endpoints(self, app):
            """Only what SERVING.md documents: liveness, /metrics (and the TF Serving
            routes added above); none of KServe's V1 listing, V2 or OpenAI routes, nor
            FastAPI's schema."""
            app.router.routes[:] = [r for r in app.router.routes
                                    if getattr(r, "path", None) != app.openapi_url]
            app.openapi_url = None
            app.add_api_route("/", self.dataplane.live, methods=["GET"])
            app.add_api_route("/metrics", metrics_handler, methods=["GET"])
            if tokens["admin"]:
                control.add_model_control(app, repository, model, tokens["admin"])

    server = Server(FASTAPI_APP_IMPORT_STRING, dataplane,
                    ModelRepositoryExtension(model_registry=repository), settings.port,
                    grace_period=int(round(settings.shutdown_timeout_s)))
    config = server.config
    config.host = settings.host
    config.http = connections.protocol(settings.client_timeout_s, settings.max_connections)
    config.timeout_keep_alive = settings.keep_alive_s
    config.h11_max_incomplete_event_size = settings.max_header_bytes
    config.limit_concurrency = settings.max_connections + 8  # a backstop: 503 past it
    config.backlog = 2048
    server.create_application()
    _add_error_answers(app)
    from albert_tf.serving.limits import Limits

    app.add_middleware(Limits, max_body_bytes=settings.max_body_bytes,
                       client_timeout_s=settings.client_timeout_s,
                       max_header_bytes=settings.max_header_bytes)
    return server


async def _closing(server, model, grace_s):
    """Sets `model.closing` half a second before the grace period of a shutdown ends,
    so that requests still waiting get a JSON 503, not uvicorn's cancellation."""
    while not server.should_exit:
        await asyncio.sleep(0.1)
    await asyncio.sleep(max(0.0, grace_s - 0.5))
    model.closing.set()


async def _serve(rest_server, model, listening):
    model.start_batching()
    model.closing = asyncio.Event()
    loop = asyncio.get_running_loop()
    watcher = loop.create_task(model.watch())
    closer = loop.create_task(_closing(rest_server._server, model,
                                       rest_server.config.timeout_graceful_shutdown))
    try:
        # What RESTServer.start runs, after create_application, on the socket bound.
        await rest_server._server.serve(sockets=[listening])
    finally:
        watcher.cancel()
        closer.cancel()
        await model.batcher.stop()


def _add_tf_serving_routes(app, repository, dataplane, api_token):
    from fastapi import APIRouter
    from starlette.routing import Route
    from kserve.errors import ModelNotFound
    from kserve.protocol.rest.v1_endpoints import V1Endpoints

    from albert_tf.serving.control import check_bearer

    def served(name, version=None):
        action = (version if version is not None else name).rpartition(":")[2]
        if ":" in (version or name) and action in ("predict", "explain"):
            raise MethodNotAllowed(f":{action} takes POST")
        model = repository.get_model(name)
        if model is None:
            raise ModelNotFound(name)
        if version is not None and version != str(model.current.version):
            raise VersionNotFound(f"model {name} has no version {version} loaded; it serves "
                                  f"version {model.current.version}")
        return model.current

    async def status(model_name: str, version: str | None = None):
        current = served(model_name, version)
        return {"model_version_status": [{"version": str(current.version), "state": "AVAILABLE",
                                          "status": {"error_code": "OK", "error_message": ""}}]}

    async def metadata(model_name: str, version: str | None = None):
        return served(model_name, version).metadata

    endpoints = V1Endpoints(dataplane)

    async def predict(request):
        """KServe's V1 predict for the model (and version) of the path."""
        check_bearer(request.headers, api_token, "predict")
        name = request.path_params["model_name"]
        served(name, request.path_params.get("version"))
        return await endpoints.predict(name, request)

    async def explain(model_name: str):
        served(model_name)
        raise VersionNotFound(f"model {model_name} has no explainer (TF Serving's API has "
                              f"none); use :predict")

    # Predict as plain Starlette routes, first: a request is matched against the routes
    # in order, and FastAPI's parameter machinery would cost each predict request more
    # than the rest of its routing.
    app.router.routes[:0] = [Route(f"/v1/models/{{model_name}}{where}:predict", predict,
                                   methods=["POST"])
                             for where in ("", "/versions/{version}")]
    router = APIRouter(prefix="/v1/models")
    router.add_api_route("/{model_name}", status, methods=["GET"])
    router.add_api_route("/{model_name}/metadata", metadata, methods=["GET"])
    router.add_api_route("/{model_name}/versions/{version}", status, methods=["GET"])
    router.add_api_route("/{model_name}/versions/{version}/metadata", metadata, methods=["GET"])
    router.add_api_route("/{model_name}:explain", explain, methods=["POST"])
    app.include_router(router)


class VersionNotFound(LookupError):
    """A version or route that is not served (the server answers 404)."""


class MethodNotAllowed(LookupError):
    """A served route asked with another HTTP method (the server answers 405)."""


def _add_error_answers(app):
    """Each refusal as `{"error": "<one line>"}` with its status (counted and logged
    once per interval by `limits.Limits`, not a line each)."""
    from fastapi.responses import JSONResponse
    from kserve.errors import InvalidInput, ModelNotFound

    from albert_tf.serving.batching import QueueFull
    from albert_tf.serving.control import Unauthorized
    from albert_tf.serving.model import DeadlineExceeded, ShuttingDown, TooManyRows

    def answer(status):
        async def handler(request, exc):
            log.debug("%s %s: %s", int(status), request.url.path, exc)
            return JSONResponse(status_code=status, content={"error": str(exc)})
        return handler

    for error, status in ((InvalidInput, HTTPStatus.BAD_REQUEST),
                          (ModelNotFound, HTTPStatus.NOT_FOUND),
                          (Unauthorized, HTTPStatus.UNAUTHORIZED),
                          (VersionNotFound, HTTPStatus.NOT_FOUND),
                          (TooManyRows, HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
                          (MethodNotAllowed, HTTPStatus.METHOD_NOT_ALLOWED),
                          (QueueFull, HTTPStatus.SERVICE_UNAVAILABLE),
                          (ShuttingDown, HTTPStatus.SERVICE_UNAVAILABLE),
                          (DeadlineExceeded, HTTPStatus.GATEWAY_TIMEOUT)):
        app.add_exception_handler(error, answer(status))
