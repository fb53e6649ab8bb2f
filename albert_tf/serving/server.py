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
    with _kserve_argv():
        try:
            from kserve.model_server import app
        except ImportError as e:
            raise ValueError(f"albert-tf serve needs kserve ({e}): pip install --no-deps -r "
                             "requirements-serve.txt") from None

        from albert_tf.serving.model import ExportModel

    _check_address(settings.host, settings.port)  # before the seconds a model takes to load
    model = ExportModel(model_name(settings, root, fixed), root, fixed, settings)
    model.load()
    rest_server = _rest_server(app, model, settings)
    print(f"serving {model.name} version {model.current.version} ({model.current.folder}) on "
          f"http://{settings.host}:{settings.port}/v1/models/{model.name}", flush=True)
    # uvicorn handles SIGTERM and SIGINT while it serves, then raises the signal again
    # under the handler found before: make that one harmless, so the exit status is 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: None)
    asyncio.run(_serve(rest_server, model))


def _check_address(host, port):
    import socket

    try:
        with socket.create_server((host, port)):
            pass
    except OSError as e:
        raise ValueError(f"--host/--port: cannot listen on {host}:{port} ({e.strerror})") from None


def _rest_server(app, model, settings):
    from kserve.constants.constants import FASTAPI_APP_IMPORT_STRING
    from kserve.model_repository import ModelRepository
    from kserve.protocol.dataplane import DataPlane
    from kserve.protocol.model_repository_extension import ModelRepositoryExtension
    from kserve.protocol.rest.server import RESTServer

    for name in ("kserve", "kserve.trace", "uvicorn.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", "ORJSONResponse is deprecated")  # KServe's answers
    repository = ModelRepository()
    repository.update(model)
    dataplane = DataPlane(model_registry=repository)
    _add_tf_serving_routes(app, repository, dataplane)  # before KServe's own /v1/models/NAME

    class Server(RESTServer):
        def _add_middlewares(self, app):
            """None of KServe's: its timing middleware logs two `getrusage` calls a request
            to a logger that is off (about a third of a small request's time in the event
            loop); the metrics that matter are `Limits`' and KServe's model histograms."""

    server = Server(FASTAPI_APP_IMPORT_STRING, dataplane,
                    ModelRepositoryExtension(model_registry=repository), settings.port,
                    grace_period=int(round(settings.shutdown_timeout_s)))
    server.config.host = settings.host
    server.create_application()
    _add_error_answers(app)
    from albert_tf.serving.limits import Limits

    app.add_middleware(Limits, max_body_bytes=settings.max_body_bytes)
    return server


async def _serve(rest_server, model):
    model.start_batching()
    watcher = asyncio.get_running_loop().create_task(model.watch())
    try:
        await rest_server._server.serve()  # what RESTServer.start runs, after create_application
    finally:
        watcher.cancel()
        await model.batcher.stop()


def _add_tf_serving_routes(app, repository, dataplane):
    from fastapi import APIRouter
    from starlette.routing import Route
    from kserve.errors import ModelNotFound
    from kserve.protocol.rest.v1_endpoints import V1Endpoints

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
    """Each refusal as `{"error": "<one line>"}` with its status, logged as one line."""
    from fastapi.responses import JSONResponse
    from kserve.errors import InvalidInput, ModelNotFound

    from albert_tf.serving.batching import QueueFull
    from albert_tf.serving.model import DeadlineExceeded

    def answer(status):
        async def handler(request, exc):
            log.info("%s %s: %s", int(status), request.url.path, exc)
            return JSONResponse(status_code=status, content={"error": str(exc)})
        return handler

    for error, status in ((InvalidInput, HTTPStatus.BAD_REQUEST),
                          (ModelNotFound, HTTPStatus.NOT_FOUND),
                          (VersionNotFound, HTTPStatus.NOT_FOUND),
                          (MethodNotAllowed, HTTPStatus.METHOD_NOT_ALLOWED),
                          (QueueFull, HTTPStatus.SERVICE_UNAVAILABLE),
                          (DeadlineExceeded, HTTPStatus.GATEWAY_TIMEOUT)):
        app.add_exception_handler(error, answer(status))
