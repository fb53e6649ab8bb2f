"""Loading a fine-tuned model folder back, with its task and tokenizer."""

import os

import tasks
from albert_tf import checkpoints
from albert_tf.backbone import AlbertBackbone
from albert_tf.checkpoints import native
from albert_tf.training.settings import FinetuneSettings


def load_finetuned(model_dir):
    """(task, settings, model, tokenizer) of a fine-tuned model folder.

    `model_dir` is the `model/` folder a fine-tuning run writes: albert_tf's
    format with the task head, the run's settings and its SentencePiece model.
    """
    meta = native.read_metadata(model_dir)
    if "task" not in meta or "settings" not in meta:
        raise ValueError(f"{model_dir}: not a fine-tuned model (no task in "
                         f"{native.CONFIG_FILE}); its heads: {meta.get('heads')}")
    task = tasks.get(meta["task"])
    settings = FinetuneSettings(**meta["settings"])
    tokenizer = task.make_tokenizer(os.path.join(model_dir, checkpoints.SPM_FILE))
    checkpoint = checkpoints.read_checkpoint(model_dir)
    model = task.build_model(AlbertBackbone(checkpoint[1]), settings)
    if not checkpoints.load_task_weights(model, checkpoint):
        raise ValueError(f"{model_dir}: holds no {model.head_kind} head for task {task.name!r}")
    return task, settings, model, tokenizer
