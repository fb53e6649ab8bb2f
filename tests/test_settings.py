"""Settings declared once: validation at construction, generated flags, resume checks,
required fields, aliases and roles."""

import dataclasses
import json

import pytest
from absl import flags

from albert_tf.ablation.settings import AblationSettings
from albert_tf.commands import cli
from albert_tf.commands.predictor import PredictSettings
from albert_tf.distillation.settings import DistillSettings
from albert_tf.pretraining.options import DataOptions
from albert_tf.pretraining.train_settings import PretrainSettings
from albert_tf.settings import setting
from albert_tf.training import settings as settings_lib
from albert_tf.training.settings import FinetuneSettings

PRETRAIN = dict(input_files="data-*", output_dir="out")


@pytest.mark.parametrize("field, value, message", [
    ("accumulation_steps", 0, "accumulation_steps must be >= 1, got 0"),
    ("learning_rate", -1e-3, "learning_rate must be > 0, got -0.001"),
    ("optimizer", "sgd", "optimizer must be one of adamw, lamb, got 'sgd'"),
    ("strategy", "gpu", "strategy must be one of auto, one_device, mirrored, multi_worker, tpu"),
    ("precision", "fp8", "precision must be one of auto, fp32, bf16, fp16, got 'fp8'"),
    ("xla", "yes", "xla must be one of auto, on, off, got 'yes'"),
    ("batch_size", 4.0, "batch_size must be an integer, got 4.0"),
    ("recompute", "no", "recompute must be true or false, got 'no'"),
    ("warmup_steps", 200_000, "warmup_steps must be <= train_steps=125000, got 200000"),
    ("batch_size", 4095, "batch_size must be divisible by accumulation_steps=2, got 4095"),
])
def test_pretraining_settings_name_the_bad_field(field, value, message):
    extra = {"accumulation_steps": 2} if message.endswith("4095") else {}
    with pytest.raises(ValueError) as raised:
        PretrainSettings(**PRETRAIN, **extra, **{field: value})
    assert str(raised.value).startswith(message)


def test_finetune_and_pretrain_share_one_declaration_with_their_own_defaults():
    shared = {f.name: f for f in dataclasses.fields(settings_lib.TrainingSettings)}
    pretrain = {f.name: f for f in dataclasses.fields(PretrainSettings)}
    finetune = {f.name: f for f in dataclasses.fields(FinetuneSettings)}
    for name, field in shared.items():
        assert pretrain[name].metadata["help"] == finetune[name].metadata["help"] or \
            name == "vocab_file", name
    assert (PretrainSettings(**PRETRAIN).optimizer, FinetuneSettings(
        task="rte", output_dir="o").optimizer) == ("lamb", "adamw")
    assert PretrainSettings(**PRETRAIN).batch_size == 4096


def test_recompute_with_dropout_is_refused():
    with pytest.raises(ValueError, match=r"recompute needs dropout=0 .*got dropout=0.1"):
        FinetuneSettings(task="rte", output_dir="o", recompute=True, dropout=0.1)


def test_flags_carry_the_fields_defaults_help_and_choices():
    values = flags.FlagValues()
    cli.define_flags(PretrainSettings, values)
    for field in dataclasses.fields(PretrainSettings):
        default = None if field.default is dataclasses.MISSING else field.default
        assert values[field.name].default == default, field.name
        assert values[field.name].help.endswith(field.metadata["help"])
    assert values["optimizer"].parser.enum_values == ["adamw", "lamb"]
    values(["prog", "--input_files=a", "--output_dir=b", "--batch_size=8", "--recompute"])
    settings = cli.settings_from_flags(PretrainSettings, values)
    assert (settings.batch_size, settings.recompute, settings.train_steps) == (8, True, 125_000)
    assert cli.given_settings(PretrainSettings, values) == {
        "input_files": "a", "output_dir": "b", "batch_size": 8, "recompute": True}


def test_unset_flags_mean_not_given():
    values = flags.FlagValues()
    cli.define_flags(FinetuneSettings, values, unset=FinetuneSettings.fields_with("recipe"),
                     unset_help=" Default: the recipe.")
    assert values["learning_rate"].default is None
    assert values["learning_rate"].help.endswith(" Default: the recipe.")
    assert "task_options" not in values  # a structured field has no flag


def test_data_options_flags_and_validation():
    values = flags.FlagValues()
    cli.define_flags(DataOptions, values)
    values(["prog", "--max_seq_length=4"])
    with pytest.raises(ValueError, match=r"max_seq_length must be >= 5 \(\[CLS\] a \[SEP\] b "
                                         r"\[SEP\]\), got 4"):
        cli.settings_from_flags(DataOptions, values)


def test_a_saved_file_with_an_unknown_key_names_the_file(tmp_path):
    (tmp_path / "settings.json").write_text('{"task": "rte", "output_dir": "x", "batch": 3}')
    with pytest.raises(ValueError, match=r"settings.json: unknown setting\(s\) \['batch'\]"):
        settings_lib.load_saved(FinetuneSettings, str(tmp_path))


def test_a_saved_run_resumes_where_the_folder_is_now(tmp_path):
    FinetuneSettings(task="rte", output_dir="elsewhere/run", vocab_file="v.model").save(
        str(tmp_path / "settings.json"))
    saved = settings_lib.load_saved(FinetuneSettings, str(tmp_path))
    assert saved.output_dir == str(tmp_path)


def test_an_old_settings_file_with_spm_model_still_reads(tmp_path):
    (tmp_path / "settings.json").write_text(
        '{"task": "rte", "output_dir": "x", "spm_model": "a.model"}')
    assert settings_lib.load_saved(FinetuneSettings, str(tmp_path)).vocab_file == "a.model"


def test_resume_conflicts_compare_what_paths_point_to(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "glue").mkdir()
    saved = FinetuneSettings(task="rte", output_dir="runs/ck", data_dir="glue", train_steps=4, warmup_steps=1,
                             precision="fp32", xla="off", task_options={"doc_stride": 3})
    same = {"data_dir": f"{tmp_path}/glue/", "precision": "auto", "xla": "auto",
            "output_dir": "./runs/ck/", "log_every": 7, "task_options": {"doc_stride": 3}}
    assert settings_lib.resume_conflicts(saved, same) == {}
    assert settings_lib.resume_conflicts(saved, {"train_steps": 5, "precision": "bf16",
                                                 "task_options": {"doc_stride": 4}}) == {
        "train_steps": (4, 5), "precision": ("fp32", "bf16"), "task_options.doc_stride": (3, 4)}


def test_ctrl_c_outside_training_is_one_line_and_exit_status_130(capsys):
    with pytest.raises(SystemExit) as stopped:
        with cli.user_errors():
            raise KeyboardInterrupt
    assert stopped.value.code == 130
    assert capsys.readouterr().err == ("error: interrupted; every file is written whole or not "
                                       "at all, so the same command continues from what was "
                                       "finished\n")


def test_roles_name_the_fields_each_rule_reads():
    assert FinetuneSettings.fields_with("recipe") == (
        "learning_rate", "batch_size", "train_steps", "warmup_steps", "max_seq_length",
        "dropout", "classifier_dropout")
    assert FinetuneSettings.fields_with("scratch") == (
        "learning_rate", "train_steps", "warmup_steps", "dropout")
    assert FinetuneSettings.fields_with("resumable") == (
        "strategy", "tpu", "keep_checkpoints", "log_every", "do_train", "do_eval",
        "do_predict", "export", "eval_batch_size", "report_to", "mlflow_tracking_uri",
        "mlflow_experiment", "mlflow_parent_run")
    assert FinetuneSettings.fields_with("invocation") == ("do_train",)
    assert FinetuneSettings.fields_with("auto") == ("precision", "xla", "layer_execution")
    assert FinetuneSettings.fields_with("run_control") == ("do_eval", "do_predict", "export")
    assert PretrainSettings.fields_with("invocation") == ()
    with pytest.raises(ValueError, match=r"^unknown role 'recipes'; known: recipe, scratch"):
        FinetuneSettings.fields_with("recipes")
    with pytest.raises(ValueError, match=r"^unknown role\(s\) \['resumeable'\]"):
        setting(1, "A count.", roles=("resumeable",))


def test_roles_decide_what_a_resumed_run_may_change():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class WatchedSettings(FinetuneSettings):
        log_to: str = setting("tensorboard", "Where scalars go.", roles=("resumable",))
        probe: str = setting("auto", "A choice made when the run starts.", roles=("auto",))

    saved = WatchedSettings(task="rte", output_dir="o", probe="fast")
    assert settings_lib.resume_conflicts(saved, {"log_to": "wandb", "probe": "auto",
                                                 "seed": 3}) == {"seed": (12345, 3)}
    assert settings_lib.resume_conflicts(saved, {"probe": "slow"}) == {
        "probe": ("fast", "slow")}


def test_an_old_key_in_a_settings_file_is_read_and_both_names_are_refused(tmp_path):
    ablation = AblationSettings.from_dict({"output_dir": "o", "corpus": "c.txt",
                                           "spm_model": "v.model", "budget_steps": 3})
    assert ablation.vocab_file == "v.model"
    (tmp_path / "settings.json").write_text(json.dumps(
        {"task": "rte", "output_dir": "x", "spm_model": "a.model", "vocab_file": "b.model"}))
    with pytest.raises(ValueError, match=r"settings.json: give --vocab_file or its alias "
                                         r"--spm_model, not both$"):
        settings_lib.load_saved(FinetuneSettings, str(tmp_path))


def test_a_field_without_a_default_is_a_required_flag():
    assert PredictSettings.required() == ("model",)
    assert DistillSettings.required() == ("output_dir", "task", "teacher", "student")
    with pytest.raises(ValueError, match=r"^missing required flag\(s\): --model$"):
        PredictSettings.from_dict({"batch_size": 2})
    with pytest.raises(ValueError, match=r"^run.json: missing required flag\(s\): --output_dir, "
                                         r"--task$"):
        FinetuneSettings.from_dict({"seed": 1}, "run.json")
    # What a recipe or a teacher supplies is not asked of the user.
    assert DistillSettings.missing({"output_dir": "o"}, supplied=("task",)) == [
        "teacher", "student"]
