"""`albert-tf serve`'s parts: an export served over TF Serving's REST API on KServe's
Python model server (`server.run`), with server-side batching (`batching`), TF
Serving's request and answer formats (`rest`), version loading (`versions`),
limits and metrics (`limits`, `metrics`). The program is `albert_tf/serve.py`."""
