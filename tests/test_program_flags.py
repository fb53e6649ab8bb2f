"""The flags of inspect, tokenizer, download and create_pretraining_data come from their
settings classes, under the names and defaults users' scripts already pass."""

import pytest
from absl import flags

import cli_helpers as cli_run
from albert_tf.commands import cli
from albert_tf.datasets import DownloadSettings
from albert_tf.commands.inspect_settings import InspectSettings
from albert_tf.pretraining.options import DataFiles
from albert_tf.tokenizer.trainers import TrainSettings

# The flags each program had before they were generated, with their defaults.
PROGRAMS = {
    InspectSettings: {
        "model": "albert_base", "sharing": None, "seq_length": 512, "num_layers": None,
        "num_groups": None, "num_inner_repetitions": None, "heads": False,
        "activation_dtype": "float32", "measure": False, "batch_size": 8, "repeats": 10,
        "warmup": 3, "xla": "auto", "hidden_states": False, "init_checkpoint": None,
        "input": None, "output": None, "compare": None, "vocab_file": None},
    TrainSettings: {"type": "sentencepiece", "input": None, "vocab_size": None,
                    "output": None, "lowercase": False, "verbose": False},
    DownloadSettings: {"dataset": [], "checkpoint": [], "output_dir": "data"},
    DataFiles: {"input": None, "vocab_file": None, "output": None, "progress": True},
}


@pytest.mark.parametrize("settings_class", PROGRAMS, ids=lambda c: c.__name__)
def test_the_flags_keep_their_names_and_defaults(settings_class):
    values = flags.FlagValues()
    cli.define_flags(settings_class, values)
    assert {name: values[name].default for name in values} == PROGRAMS[settings_class]


def test_a_list_flag_gives_a_tuple_and_an_enum_flag_its_choices():
    values = flags.FlagValues()
    cli.define_flags(TrainSettings, values)
    values(["prog", "--input=a.txt,b/*.txt", "--vocab_size=30", "--output=o"])
    settings = cli.settings_from_flags(TrainSettings, values)
    assert settings.input == ("a.txt", "b/*.txt") and settings.vocab_size == 30
    inspect = flags.FlagValues()
    cli.define_flags(InspectSettings, inspect)
    assert inspect["xla"].parser.enum_values == ["auto", "on", "off"]
    assert inspect["sharing"].parser.enum_values == ["all", "attention", "ffn", "none"]


@pytest.mark.parametrize("settings_class, values, message", [
    (InspectSettings, {"warmup": -1}, "warmup must be >= 0, got -1"),
    (InspectSettings, {"repeats": 0}, "repeats must be >= 1, got 0"),
    (InspectSettings, {"hidden_states": True, "input": "t.txt"},
     "--hidden_states needs --init_checkpoint=CHECKPOINT and --input=TEXTS"),
    (DownloadSettings, {}, "nothing to download: give --dataset (a task name) or "
     "--checkpoint"),
    (DownloadSettings, {"dataset": "rte"}, "dataset must be a list of strings, got 'rte'"),
    (TrainSettings, {"type": "bpe", "input": ["x"], "vocab_size": 9, "output": "o"},
     "type must be one of sentencepiece, wordpiece, got 'bpe'"),
])
def test_bad_values_name_the_field(settings_class, values, message):
    with pytest.raises(ValueError) as raised:
        settings_class(**values)
    assert str(raised.value).startswith(message)


def test_helpfull_lists_the_generated_flags():
    result = cli_run.run("albert_tf.inspect", "--helpfull", timeout=60)
    assert "Traceback" not in result.stderr
    for name in PROGRAMS[InspectSettings]:
        assert f"--{name}" in result.stdout or f"--[no]{name}" in result.stdout, name


def test_an_alias_stands_for_its_flag_and_both_together_are_refused():
    from albert_tf.commands import api, cli

    aliases = {"spm_model": "vocab_file"}
    assert cli.without_aliases({"spm_model": "a.model", "seed": 1}, aliases) == {
        "vocab_file": "a.model", "seed": 1}
    with pytest.raises(ValueError, match=r"^give --vocab_file or its alias --spm_model, not "
                                         r"both$"):
        cli.without_aliases({"spm_model": "a", "vocab_file": "b"}, aliases)
    with pytest.raises(ValueError, match="give --formats or its alias --tflite_variants"):
        api.export(model_dir="m", export_dir="e", formats="tflite", tflite_variants="int8")
