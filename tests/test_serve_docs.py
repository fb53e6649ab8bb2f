"""What SERVING.md shows a deployment: its requests and its KServe manifests.

- Every request shown for SQuAD v2.0, C3, CHID and NER, sent to `albert-tf serve` on
  127.0.0.1 serving a tiny export of that task (slow tier: an export and a server per
  task; the RTE examples run in the default tier, in test_serve.py): each is valid
  against the served metadata and answered 200, each answer shown has the served
  answer's form and agrees with its request; and the server refuses a `[n, 1]` text
  input with 400 where the signature takes `[n]`.
- The `InferenceService` manifests (no cluster here): parsed, their required fields
  present, and the custom predictor's command parsed by `albert-tf serve`'s own flags,
  its port, probe and model path agreeing with them.
"""

import json
import os
import re

import pytest
from absl import flags

import export_helpers
import serve_helpers
from albert_tf.commands import cli
from albert_tf.commands import COMMANDS
from albert_tf.serving.settings import ServeSettings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


_chinese_export = export_helpers.chinese_export


def _export(tmp_path_factory, name):
    if name == "squad_v2":
        return export_helpers.exported(tmp_path_factory, "squad_v2")[0]
    folder = tmp_path_factory.mktemp(name)
    if name == "c3":
        return _chinese_export(folder, "c3", max_qa_length=8)
    if name == "chid":
        return _chinese_export(folder, "chid")
    return _chinese_export(folder, "token_classification",
                           entity_tags="O,B-LOC,I-LOC,B-ORG,I-ORG,B-PER,I-PER")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["squad_v2", "c3", "chid", "ner"])
def test_the_documented_requests_are_valid_and_answered(tmp_path_factory, name):
    pytest.importorskip("kserve", reason="albert-tf serve needs requirements-serve.txt")
    requests = [r for r in serve_helpers.documented_requests(ROOT) if r.model == name]
    assert requests and all(r.method == "POST" for r in requests)
    version_dir = _export(tmp_path_factory, name)
    server = serve_helpers.Server(os.path.dirname(version_dir), name=name)
    try:
        serve_helpers.check_documented(server, requests, export_helpers.export_info(version_dir))
        # A text input of shape [n, 1] where the signature takes [n]: 400, naming it.
        body = json.loads(requests[0].body)
        columns = {k: [row[k] for row in body["instances"]] for k in body["instances"][0]}
        text = next(k for k, v in columns.items() if isinstance(v[0], str))
        columns[text] = [[v] for v in columns[text]]
        status, answer = server.predict({"inputs": columns})
        assert status == 400 and f"input {text!r} has shape" in answer["error"], answer
    finally:
        returncode, _, output = server.stop()
    assert returncode == 0, output


# -- The InferenceService manifests -------------------------------------------------

def _deployment():
    with open(os.path.join(ROOT, "SERVING.md"), encoding="utf-8") as f:
        text = f.read()
    return text[text.index("### Deployment"):text.index("### A model server")]


def _manifests():
    yaml = pytest.importorskip("yaml")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", _deployment(),
                                                          re.S)]


def _serve_settings(arguments):
    """`albert-tf serve`'s settings from its command-line flags, parsed as it parses them."""
    values = flags.FlagValues()
    cli.define_flags(ServeSettings, values)
    values(["albert-tf serve", *arguments])
    return cli.settings_from_flags(ServeSettings, values)


def test_the_inference_services_have_what_kserve_requires_and_match_the_serve_flags():
    tf_serving, custom = _manifests()
    dns_label = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?$")
    for manifest in (tf_serving, custom):
        assert manifest["apiVersion"] == "serving.kserve.io/v1beta1"
        assert manifest["kind"] == "InferenceService"
        assert dns_label.match(manifest["metadata"]["name"])
    name = custom["metadata"]["name"]
    # TF Serving's runtime: the model format KServe maps to it, and the export root.
    model = tf_serving["spec"]["predictor"]["model"]
    assert model["modelFormat"]["name"] == "tensorflow"
    assert re.match(r"(gs|s3|pvc|https?)://\S+/exports/" + name + "$", model["storageUri"])
    # The custom predictor: KServe's container name, and a command `albert-tf serve` takes.
    predictor = custom["spec"]["predictor"]
    assert 1 <= predictor["minReplicas"] <= predictor["maxReplicas"]
    (container,) = predictor["containers"]
    assert container["name"] == "kserve-container" and container["image"]
    program, command, *arguments = container["command"]
    assert (program, command in COMMANDS, command) == ("albert-tf", True, "serve")
    settings = _serve_settings(arguments)
    env = {e["name"]: e["value"] for e in container["env"]}
    # KServe's storage initializer copies STORAGE_URI to /mnt/models, which is served.
    assert settings.model == "/mnt/models" and env["STORAGE_URI"] == model["storageUri"]
    assert settings.model_name == name and settings.host == "0.0.0.0"
    (port,) = container["ports"]
    assert port == {"containerPort": settings.port, "protocol": "TCP"}
    probe = container["readinessProbe"]["httpGet"]
    assert probe == {"path": f"/v1/models/{name}", "port": settings.port}
    # The pod's termination grace (Kubernetes' default, 30 s) covers the server's shutdown.
    grace = custom["spec"]["predictor"].get("terminationGracePeriodSeconds", 30)
    assert settings.shutdown_timeout_s < grace
    # The Docker command serves the same root under the same name, on TF Serving's port.
    docker = re.search(r"docker run .*?tensorflow/serving", _deployment(), re.S).group(0)
    assert f'exports/{name}:/models/{name}"' in docker and f"MODEL_NAME={name}" in docker
    assert "-p 8501:8501" in docker
