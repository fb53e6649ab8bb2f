"""The server's Prometheus metrics, exported at /metrics beside KServe's own.

- `albert_tf_serve_requests_total{code}`: predict requests answered, by HTTP status;
- `albert_tf_serve_request_seconds`: their latency, from arrival to answer;
- `albert_tf_serve_batch_rows`: rows of each call of the model (server-side batches);
- `albert_tf_serve_queued_requests`: requests waiting for the model now;
- `albert_tf_serve_model_version`: the version served.
"""

from prometheus_client import Counter, Gauge, Histogram

REQUESTS = Counter("albert_tf_serve_requests", "Predict requests answered, by HTTP status code.",
                   ["code"])
LATENCY = Histogram("albert_tf_serve_request_seconds", "Predict latency, arrival to answer.",
                    buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60))
BATCH_ROWS = Histogram("albert_tf_serve_batch_rows", "Sequences of each call of the model.",
                       buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512))
QUEUED = Gauge("albert_tf_serve_queued_requests", "Requests waiting for the model.")
VERSION = Gauge("albert_tf_serve_model_version", "The export version served.")
