"""multi_worker: two local worker processes on loopback, against one device."""

import pytest
import json
import socket

import numpy as np
from safetensors.numpy import load_file

import cli_helpers as cli

MODULE = "albert_tf.finetune"


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


@pytest.mark.slow  # a minute of CI; the slow tier (make test-all) runs it
def test_two_workers_train_and_evaluate_like_one_device(tmp_path):
    model = cli.tiny_model(tmp_path)
    common = ["--train_steps=16", "--dropout=0.0", "--classifier_dropout=0.0"]
    single = cli.run(MODULE, *cli.rte_args(tmp_path / "single", model), *common,
                     "--strategy=one_device")
    assert single.returncode == 0, single.stderr[-3000:]

    workers = [f"localhost:{p}" for p in _free_ports(2)]
    processes = [
        cli.start(MODULE, *cli.rte_args(tmp_path / "multi", model), *common,
                  "--strategy=multi_worker",
                  TF_CONFIG=json.dumps({"cluster": {"worker": workers},
                                        "task": {"type": "worker", "index": i}}))
        for i in range(2)]
    logs = [p.communicate(timeout=400)[0] for p in processes]
    for p, log in zip(processes, logs):
        assert p.returncode == 0, log[-3000:]

    results = cli.results(tmp_path / "multi")
    assert results["replicas"] == 2
    assert results["dev"] == cli.results(tmp_path / "single")["dev"]
    a = load_file(str(tmp_path / "single" / "model" / "model.safetensors"))
    b = load_file(str(tmp_path / "multi" / "model" / "model.safetensors"))
    for name in a:
        np.testing.assert_allclose(b[name], a[name], atol=2e-5, err_msg=name)
