"""`InspectSettings`: the flags of `albert-tf inspect`, declared once.

Imports nothing heavy, so that a bad flag is reported before TensorFlow loads.
"""

import dataclasses

from albert_tf.config import SHARING_MODES
from albert_tf.settings import NON_NEGATIVE, POSITIVE, Settings, setting

ACTIVATION_DTYPES = ("float32", "bfloat16", "float16")


@dataclasses.dataclass(frozen=True, kw_only=True)
class InspectSettings(Settings):
    """The flags of `albert-tf inspect`; invalid values raise `ValueError` naming the field."""

    model: str = setting("albert_base", help="A preset name (albert_base, albert_large, "
                         "albert_xlarge, albert_xxlarge) or a path to an albert_tf config JSON.")
    sharing: str | None = setting(None, help="One sharing mode; default: all side by side.",
                                  choices=SHARING_MODES)
    seq_length: int = setting(512, help="Tokens per example.", rule=POSITIVE)
    num_layers: int | None = setting(None, help="Override the preset's number of layers.",
                                     rule=POSITIVE)
    num_groups: int | None = setting(None, help="Override the number of layer groups.",
                                     rule=POSITIVE)
    num_inner_repetitions: int | None = setting(None, help="Override blocks per layer.",
                                                rule=POSITIVE)
    heads: bool = setting(False, help="Include the MLM and SOP pretraining heads.")
    activation_dtype: str = setting(
        "float32", help="Element size for activation memory (and, with --measure, the "
        "compute dtype: mixed_bfloat16 / mixed_float16).", choices=ACTIVATION_DTYPES)
    measure: bool = setting(False, help="Also time a forward pass and a training step of "
                            "every sharing mode on this machine.")
    batch_size: int = setting(8, help="Examples per step (--measure) or per batch of texts "
                              "(--hidden_states).", rule=POSITIVE)
    repeats: int = setting(10, help="Timed calls per step and mode (--measure).",
                           rule=POSITIVE)
    warmup: int = setting(3, help="Untimed calls before them (--measure).", rule=NON_NEGATIVE)
    xla: str = setting("auto", help="XLA for the timed steps (--measure); auto: on for GPUs, "
                       "as in training.", choices=("auto", "on", "off"))
    hidden_states: bool = setting(False, help="Measure each layer's effect on the hidden "
                                  "states of --init_checkpoint on the texts of --input.")
    init_checkpoint: str | None = setting(None, help="The checkpoint (--hidden_states).",
                                          roles=("reads",))
    input: str | None = setting(None, help="Texts, one per line (--hidden_states).",
                                roles=("reads",))
    output: str | None = setting(None, help="Folder for hidden_states.json and .png "
                                 "(--hidden_states).", roles=("writes",))
    compare: str | None = setting(None, help="A second checkpoint for the same texts and "
                                  "plot (--hidden_states).", roles=("reads",))
    vocab_file: str | None = setting(None, help="The vocabulary (--hidden_states); default: "
                                     "each checkpoint's own.", aliases=("spm_model",),
                                     roles=("reads",))

    def checks(self):
        return [(not self.hidden_states or bool(self.init_checkpoint and self.input),
                 "--hidden_states needs --init_checkpoint=CHECKPOINT and --input=TEXTS "
                 "(a file, one text per line)")]
