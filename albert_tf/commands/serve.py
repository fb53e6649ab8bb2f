r"""A model server for an export: TF Serving's REST API, on KServe's model server.

    albert-tf serve --model=exports/rte [--model_name=rte] [--port=8501] [--host=127.0.0.1]
    python -m albert_tf.serve --model=exports/rte --max_batch_size=32 --batch_timeout_ms=2

    curl -s localhost:8501/v1/models/rte                 # {"model_version_status": [...]}
    curl -s localhost:8501/v1/models/rte/metadata        # the signatures
    curl -s -X POST localhost:8501/v1/models/rte:predict \
      -d '{"instances": [{"text_a": "A man sleeps.", "text_b": "He rests."}]}'

`--model`: an export root (`albert-tf export --export_dir`); its highest
numeric version is served and a newer one picked up without a restart. The
server needs only the export, `tensorflow`, `tensorflow_text` and `kserve`.
Requests are batched on the server; limits, status codes and metrics:
SERVING.md, "A model server".
"""

import os
import sys

from albert_tf.commands import cli
from albert_tf.commands.program import Flags, Program
from albert_tf.serving.settings import ServeSettings


def run(settings):
    cli.load_tensorflow()  # after the checks
    from albert_tf.serving import server

    server.run(settings)
    # Every accepted request is answered: leave without TensorFlow's teardown, which takes
    # seconds on a busy machine and would eat into the orchestrator's grace period.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


PROGRAM = Program("serve", run, Flags(ServeSettings), quiet=False)
