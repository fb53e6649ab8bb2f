"""`--demo`: the whole fine-tuning pipeline offline, on data generated here.

`prepare` writes a small task in the real file format of the requested task
(RTE's TSV files, or SQuAD JSON), trains a SentencePiece model on the
generated text with ALBERT's settings, and returns the settings of a small
model that learns the task in a few minutes on a laptop CPU.
"""

import json
import os

from albert_tf.demo import world
from albert_tf.io_utils import atomic_file

DEMO_TASKS = ("rte", "squad", "squad_v2")
# At most; the generated text has about a hundred words, and SentencePiece
# may end with fewer pieces (the model takes the tokenizer's count).
DEMO_VOCABULARY = 300
# A small ALBERT (all layers shared, like the real ones).
DEMO_MODEL = {"num_layers": 4, "num_heads": 4, "hidden_dim": 128, "intermediate_dim": 256,
              "embedding_dim": 64, "max_sequence_length": 128}
DEMO_SETTINGS = {"train_steps": 600, "warmup_steps": 60, "learning_rate": 1e-4,
                 "batch_size": 32, "max_seq_length": 128, "dropout": 0.0,
                 "classifier_dropout": 0.0, "checkpoint_every": 200, "eval_batch_size": 64,
                 "log_every": 20}


def _write_rte(folder, seed):
    header = {"train": "index\tsentence1\tsentence2\tlabel",
              "dev": "index\tsentence1\tsentence2\tlabel", "test": "index\tsentence1\tsentence2"}
    sizes = {"train": 3000, "dev": 300, "test": 100}
    for offset, (split, size) in enumerate(sizes.items()):
        rows = [header[split]]
        for i, (premise, hypothesis, entailed) in enumerate(
                world.entailment_pairs(seed + offset, size)):
            label = "entailment" if entailed else "not_entailment"
            rows.append(f"{i}\t{premise}\t{hypothesis}" + ("" if split == "test" else f"\t{label}"))
        with atomic_file(os.path.join(folder, f"{split}.tsv"), encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")


def _write_squad(folder, seed, v2):
    sizes = {"train": 1500, "dev": 150}
    for offset, (split, size) in enumerate(sizes.items()):
        paragraphs = []
        for p, (context, questions) in enumerate(world.qa_paragraphs(
                seed + offset, size, unanswerable_share=0.3 if v2 else 0.0)):
            qas = []
            for q, (question, answer, start) in enumerate(questions):
                qa = {"id": f"{split}-{p}-{q}", "question": question,
                      "answers": [] if answer is None else [{"text": answer,
                                                             "answer_start": start}]}
                if v2:
                    qa["is_impossible"] = answer is None
                qas.append(qa)
            paragraphs.append({"context": context, "qas": qas})
        data = {"version": "v2.0" if v2 else "1.1",
                "data": [{"title": "demo", "paragraphs": paragraphs}]}
        with atomic_file(os.path.join(folder, f"{split}.json"), encoding="utf-8") as f:
            json.dump(data, f)


def _corpus_lines(task_name, seed):
    if task_name == "rte":
        for premise, hypothesis, _ in world.entailment_pairs(seed, 2000):
            yield premise
            yield hypothesis
    else:
        for context, questions in world.qa_paragraphs(seed, 1500, unanswerable_share=0.3):
            yield context
            yield from (q for q, _, _ in questions)


def _generate(task_name, seed, folder, data_dir):
    """Writes the task files, the SentencePiece model and the model config (last)."""
    from albert_tf.config import AlbertConfig
    from albert_tf.tokenizer import SpmVocab, train_sentencepiece

    os.makedirs(data_dir, exist_ok=True)
    if task_name == "rte":
        _write_rte(data_dir, seed)
    else:
        _write_squad(data_dir, seed, v2=task_name == "squad_v2")
    corpus = os.path.join(folder, "corpus.txt")
    with atomic_file(corpus, encoding="utf-8") as f:
        f.write("\n".join(_corpus_lines(task_name, seed + 100)) + "\n")
    spm_model = train_sentencepiece([corpus], DEMO_VOCABULARY, os.path.join(folder, "spm"),
                                    lowercase=True, hard_vocab_limit=False)
    size = SpmVocab(spm_model).size  # SentencePiece may have stopped below DEMO_VOCABULARY
    with atomic_file(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        json.dump(AlbertConfig(vocabulary_size=size, **DEMO_MODEL).to_dict(), f,
                  indent=2)


def prepare(task_name, output_dir, seed=1):
    """Generates the demo data, SentencePiece model and model config.

    Returns:
        settings (name -> value) for the run: data_dir, vocab_file, model and
        a short recipe.
    """
    if task_name not in DEMO_TASKS:
        raise ValueError(f"--demo supports the tasks {', '.join(DEMO_TASKS)}, not {task_name!r}")
    folder = os.path.join(output_dir, "demo_data")
    data_dir = os.path.join(folder, task_name)
    vocab_file, model = os.path.join(folder, "spm.model"), os.path.join(folder, "model.json")
    if not os.path.isfile(model):  # a second run of the same demo reuses its data
        _generate(task_name, seed, folder, data_dir)
    settings = dict(DEMO_SETTINGS, data_dir=data_dir, vocab_file=vocab_file, model=model)
    if task_name != "rte":
        settings["task_options"] = {"doc_stride": 64, "max_query_length": 24}
    return settings


def _new_inputs(task_name, seed=7):
    """Raw-text inputs the model has not seen: `{serving input name: text}`."""
    import random

    seed = random.Random(seed).randrange(10**6)
    if task_name == "rte":
        premise, hypothesis, _ = next(iter(world.entailment_pairs(seed, 1)))
        return {"text_a": premise, "text_b": hypothesis}
    context, questions = world.qa_paragraphs(seed, 1)[0]
    return {"context": context, "question": questions[0][0]}


def finish(task, settings):
    """After a demo run: the fine-tuned model answers new raw text, through the
    serving module its task exports (what TF Serving would run)."""
    import tensorflow as tf

    from albert_tf.training.run_folder import MODEL_DIR
    from tasks.finetuned import build_serving_module

    module, _ = build_serving_module(os.path.join(settings.output_dir, MODEL_DIR))
    inputs = _new_inputs(task.name)
    outputs = module.serving_default(**{k: tf.constant([v]) for k, v in inputs.items()})
    print()
    for name, text in inputs.items():
        print(f"{name + ':':9} {text}")
    if "answer" in outputs:
        answer = outputs["answer"][0].numpy().decode("utf-8")
        print(f"answer:   {answer or '(no answer)'}")
    else:
        print(f"label:    {outputs['label'][0].numpy().decode('utf-8')}")
