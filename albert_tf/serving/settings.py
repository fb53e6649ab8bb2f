"""`ServeSettings`: the flags of `albert-tf serve`, declared once.

Imports nothing heavy, so that a bad flag is reported before TensorFlow loads.
"""

import dataclasses

from albert_tf.settings import NON_NEGATIVE, POSITIVE, POSITIVE_REAL, Rule, Settings, setting

PORT = Rule(lambda v: 1 <= v <= 65535, "a TCP port in [1, 65535]")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ServeSettings(Settings):
    model: str = setting(help="The export root (the --export_dir of `albert-tf export`): its "
                         "highest numeric version is served, and a newer one is picked up "
                         "while serving. A version folder serves that version only.")
    model_name: str = setting("", help="The NAME in /v1/models/NAME (default: the export "
                              "root's folder name).")
    port: int = setting(8501, help="The HTTP port (TF Serving's REST port).", rule=PORT)
    host: str = setting("127.0.0.1", help="The address to listen on (0.0.0.0: every "
                        "interface, as in a container).")
    max_batch_size: int = setting(32, help="Sequences per call of the model: requests "
                                  "waiting together are run as one batch of at most this "
                                  "many; a request of more runs in consecutive calls of at "
                                  "most this many each, and one past its deadline runs no "
                                  "more of them.", rule=POSITIVE)
    batch_timeout_ms: float = setting(2.0, help="How long a batch that is not full waits "
                                      "for more requests before it runs.", rule=NON_NEGATIVE)
    max_queue_size: int = setting(64, help="Calls of the model waiting at most (a request "
                                  "of more than --max_batch_size sequences waits as several); "
                                  "a request that would go past it gets 503 at once.",
                                  rule=POSITIVE)
    request_timeout_s: float = setting(30.0, help="A request not answered within this many "
                                       "seconds of its arrival gets 504.", rule=POSITIVE_REAL)
    max_body_bytes: int = setting(4 * 1024 * 1024, help="A request body larger than this "
                                  "gets 413.", rule=POSITIVE)
    poll_s: float = setting(2.0, help="How often the export root is checked for a new "
                            "version (TF Serving's --file_system_poll_wait_seconds).",
                            rule=POSITIVE_REAL)
    enable_model_control: bool = setting(False, help="Mount KServe's model repository "
                                         "routes (POST /v2/repository/models/NAME/load and "
                                         "/unload); they then require --admin_token_file's "
                                         "token as `Authorization: Bearer TOKEN`.")
    admin_token_file: str = setting("", help="A file holding the bearer token of the model "
                                     "control routes (needed by --enable_model_control).")
    api_token_file: str = setting("", help="A file holding a bearer token every :predict "
                                  "request must send (`Authorization: Bearer TOKEN`); status, "
                                  "metadata, health and /metrics stay open for probes.")
    max_connections: int = setting(1000, help="Open connections at most; one more closes "
                                   "the connection idle the longest (or, with none idle, is "
                                   "refused).", rule=POSITIVE)
    client_timeout_s: float = setting(10.0, help="A client must send a request's headers, "
                                      "and then its body, within this many seconds (each), "
                                      "else its connection is closed (headers) or it gets 408 "
                                      "(body).", rule=POSITIVE_REAL)
    keep_alive_s: float = setting(5.0, help="An idle connection between requests is closed "
                                  "after this many seconds.", rule=POSITIVE_REAL)
    max_header_bytes: int = setting(16 * 1024, help="A request whose headers are larger "
                                    "gets 400 and its connection closed.", rule=POSITIVE)
    max_rows_per_request: int = setting(1024, help="Sequences the model runs for one request "
                                        "at most (rows x choices, or the windows of long "
                                        "texts); more gets 413 with the numbers.",
                                        rule=POSITIVE)
    shutdown_timeout_s: float = setting(25.0, help="On SIGTERM or Ctrl-C: how long requests "
                                        "already accepted may take to be answered before "
                                        "the server exits.", rule=POSITIVE_REAL)

    def checks(self):
        return [(not self.enable_model_control or self.admin_token_file,
                 "--enable_model_control needs --admin_token_file (the routes that load and "
                 "unload the model are never open to anyone who reaches the port)")]
