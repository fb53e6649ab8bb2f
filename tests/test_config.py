import json

import pytest

from albert_tf import config as config_lib
from albert_tf.config import AlbertConfig
from helpers import tiny_config


@pytest.mark.parametrize("field,value,message", [
    ("hidden_dim", 7, "hidden_dim=7 must be divisible by num_heads=2"),
    ("num_groups", 2, "num_layers=3 must be divisible by num_groups=2"),
    ("sharing", "some", "AlbertConfig.sharing must be one of"),
    ("dropout", 1.5, "AlbertConfig.dropout must be in [0, 1), got 1.5"),
    ("num_layers", 0, "AlbertConfig.num_layers must be a positive integer, got 0"),
    ("activation", "swish", "AlbertConfig.activation must be one of"),
])
def test_bad_field_is_named(field, value, message):
    with pytest.raises(ValueError) as e:
        tiny_config(**{field: value})
    assert message in str(e.value)


def test_none_sharing_rejects_groups():
    with pytest.raises(ValueError, match="num_groups=3 has no effect with sharing='none'"):
        tiny_config(sharing="none", num_groups=3)


def test_unknown_key_rejected_with_source(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({**tiny_config().to_dict(), "hiden_dim": 5}))
    with pytest.raises(ValueError, match=r"c.json: unknown AlbertConfig field\(s\) \['hiden_dim'\]"):
        AlbertConfig.from_json_file(str(path))


def test_invalid_json_names_line(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{\n  "num_layers": 3,\n  oops\n}')
    with pytest.raises(ValueError, match=r"c.json:3:3: invalid JSON"):
        AlbertConfig.from_json_file(str(path))


def test_own_json_round_trip():
    config = tiny_config(sharing="ffn", num_groups=3, num_inner_repetitions=2, dropout=0.1)
    assert AlbertConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


@pytest.mark.parametrize("config", [
    tiny_config(),
    tiny_config(num_layers=4, num_groups=2, num_inner_repetitions=3, dropout=0.1,
                attention_dropout=0.2, activation="relu", initializer_range=0.5),
])
def test_google_json_round_trip(config):
    values = json.loads(json.dumps(config_lib.to_google_json(config)))
    assert values["hidden_act"] in ("gelu", "relu")
    assert config_lib.from_google_json(values) == config


@pytest.mark.parametrize("config", [
    tiny_config(),
    tiny_config(num_layers=4, num_groups=2, num_inner_repetitions=3, activation="gelu",
                layer_norm_epsilon=1e-6),
])
def test_hf_json_round_trip(config):
    values = json.loads(json.dumps(config_lib.to_hf_json(config)))
    assert config_lib.from_hf_json(values) == config


def test_activation_names_translate():
    # Google's "gelu" and HF's "gelu_new" are both the tanh approximation.
    assert config_lib.to_google_json(tiny_config())["hidden_act"] == "gelu"
    assert config_lib.to_hf_json(tiny_config())["hidden_act"] == "gelu_new"
    assert config_lib.to_hf_json(tiny_config(activation="gelu"))["hidden_act"] == "gelu"


def test_none_sharing_written_as_one_group_per_layer():
    values = config_lib.to_google_json(tiny_config(sharing="none"))
    assert values["num_hidden_groups"] == 3
    back = config_lib.from_google_json(values)
    assert (back.sharing, back.num_groups) == ("all", 3)


def test_partial_sharing_cannot_be_written_to_google():
    with pytest.raises(ValueError, match="sharing='attention' cannot be written in the Google"):
        config_lib.to_google_json(tiny_config(sharing="attention"))


def test_reference_configs_translate():
    from helpers import reference

    _, _, folder = reference("tiny_grouped")
    google = config_lib.from_google_json(config_lib.read_json(f"{folder}/google/albert_config.json"))
    hf = config_lib.from_hf_json(config_lib.read_json(f"{folder}/hf/config.json"))
    assert google.replace(initializer_range=0.2) == hf  # the files differ only there
    assert (hf.num_layers, hf.num_groups, hf.embedding_dim, hf.hidden_dim) == (4, 2, 16, 24)


def test_unsupported_google_option_named():
    values = config_lib.to_google_json(tiny_config())
    values["net_structure_type"] = 1
    with pytest.raises(ValueError, match="x.json: net_structure_type=1 is not supported"):
        config_lib.from_google_json(values, source="x.json")


def test_missing_google_field_named():
    values = config_lib.to_google_json(tiny_config())
    del values["hidden_size"]
    with pytest.raises(ValueError, match="missing required field 'hidden_size'"):
        config_lib.from_google_json(values)


def test_presets_load():
    assert config_lib.preset_names() == ["albert_base", "albert_large", "albert_tiny",
                                         "albert_xlarge", "albert_xxlarge"]
    xxl = AlbertConfig.preset("albert_xxlarge")
    assert (xxl.hidden_dim, xxl.num_heads, xxl.intermediate_dim, xxl.num_layers) == (
        4096, 64, 16384, 12)
    assert AlbertConfig.preset("albert_base", num_layers=6).num_layers == 6
    with pytest.raises(ValueError, match="unknown model preset 'albert_huge'"):
        AlbertConfig.preset("albert_huge")
