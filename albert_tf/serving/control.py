"""Bearer tokens, and the model control routes (off unless asked for).

KServe's model repository API (`POST /v2/repository/models/NAME/load`,
`/unload`) lets whoever calls it take the model out of service; here it is
mounted only with `--enable_model_control`, and then answers only a request
carrying `--admin_token_file`'s token as `Authorization: Bearer TOKEN`.
"""

import asyncio
import hmac
import logging

log = logging.getLogger("albert_tf.serve")


class Unauthorized(PermissionError):
    """A request without the bearer token its route needs (the server answers 401)."""


def read_token(path, flag):
    """The token in the file `path` (surrounding whitespace dropped), naming the
    flag and the file when it cannot be read or is empty."""
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{flag}={path}: cannot read the token "
                         f"({getattr(e, 'strerror', None) or e})") from None
    if not token or any(c.isspace() for c in token):
        raise ValueError(f"{flag}={path}: the file must hold one token (no spaces), "
                         f"got {'nothing' if not token else 'several words'}")
    return token


def check_bearer(headers, token, what):
    """Raises `Unauthorized` unless `headers` (a Starlette Headers) carry `token`."""
    if token is None:
        return
    given = headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(),
                                                             token.encode()):
        raise Unauthorized(f"{what} needs `Authorization: Bearer TOKEN` with the server's "
                           "token")


def add_model_control(app, repository, model, token):
    """KServe's V2 repository load and unload of `model`, behind `token`."""
    from fastapi import Request
    from kserve.errors import ModelNotFound

    def named(name):
        if name != model.name:
            raise ModelNotFound(name)

    async def unload(model_name: str, request: Request):
        check_bearer(request.headers, token, "model control")
        named(model_name)
        if repository.get_model(model_name) is not None:
            del repository.models[model_name]
            log.warning("model %s unloaded by a model control request", model_name)
        return {"name": model_name, "unload": True}

    async def load(model_name: str, request: Request):
        check_bearer(request.headers, token, "model control")
        named(model_name)
        if repository.get_model(model_name) is None:
            await asyncio.get_running_loop().run_in_executor(None, model.load)
            repository.update(model)
            log.warning("model %s loaded by a model control request (version %s)",
                        model_name, model.current.version)
        return {"name": model_name, "load": True}

    app.add_api_route("/v2/repository/models/{model_name}/load", load, methods=["POST"])
    app.add_api_route("/v2/repository/models/{model_name}/unload", unload, methods=["POST"])
