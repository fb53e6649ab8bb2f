"""`--demo`: the whole fine-tuning pipeline offline, on data generated here.

`prepare` writes a small task in the real file format of the requested task
(RTE's TSV files, SQuAD JSON, CLUE's OCNLI JSON lines, CMRC 2018's SQuAD-style
Chinese JSON), trains a vocabulary on the generated text (SentencePiece with
ALBERT's settings for English, WordPiece as Chinese ALBERTs have for
Chinese), and returns the settings of a small model that learns the task in
a few minutes on a laptop CPU.
"""

import json
import os

from albert_tf.demo import world
from albert_tf.io_utils import atomic_file

ENGLISH_TASKS = ("rte", "squad", "squad_v2")
CHINESE_TASKS = ("ocnli", "cmrc2018")
DEMO_TASKS = ENGLISH_TASKS + CHINESE_TASKS
QA_TASKS = ("squad", "squad_v2", "cmrc2018")
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


def _write_ocnli(folder, seed):
    sizes = {"train": 3000, "dev": 300, "test": 100}
    for offset, (split, size) in enumerate(sizes.items()):
        rows = []
        for i, (premise, hypothesis, label) in enumerate(world.nli_triples(seed + offset, size)):
            row = {"sentence1": premise, "sentence2": hypothesis}
            row.update({"id": i} if split == "test" else {"label": label})
            rows.append(json.dumps(row, ensure_ascii=False))
        with atomic_file(os.path.join(folder, f"{split}.json"), encoding="utf-8") as f:
            f.write("\n".join(rows) + "\n")


def _write_squad(folder, seed, v2, lexicon=world.ENGLISH):
    sizes = {"train": 1500, "dev": 150}
    for offset, (split, size) in enumerate(sizes.items()):
        paragraphs = []
        for p, (context, questions) in enumerate(world.qa_paragraphs(
                seed + offset, size, unanswerable_share=0.3 if v2 else 0.0, lexicon=lexicon)):
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
            json.dump(data, f, ensure_ascii=False)


def _corpus_lines(task_name, seed):
    if task_name in ("rte", "ocnli"):
        pairs = (world.nli_triples(seed, 2000) if task_name == "ocnli"
                 else world.entailment_pairs(seed, 2000))
        for premise, hypothesis, _ in pairs:
            yield premise
            yield hypothesis
    else:
        lexicon = world.CHINESE if task_name == "cmrc2018" else world.ENGLISH
        for context, questions in world.qa_paragraphs(seed, 1500, unanswerable_share=0.3,
                                                      lexicon=lexicon):
            yield context
            yield from (q for q, _, _ in questions)


def _vocabulary(task_name, corpus, folder):
    """The vocabulary file trained on `corpus`: WordPiece for Chinese, SentencePiece else."""
    if task_name in CHINESE_TASKS:
        from albert_tf.tokenizer import train_wordpiece

        return train_wordpiece([corpus], DEMO_VOCABULARY, os.path.join(folder, "wordpiece"),
                               lowercase=True)
    from albert_tf.tokenizer import train_sentencepiece

    return train_sentencepiece([corpus], DEMO_VOCABULARY, os.path.join(folder, "spm"),
                               lowercase=True, hard_vocab_limit=False)


def _generate(task_name, seed, folder, data_dir):
    """Writes the task files, the vocabulary and the model config (last); returns the
    vocabulary file."""
    from albert_tf.config import AlbertConfig
    from albert_tf.tokenizer.loading import load_tokenizer

    os.makedirs(data_dir, exist_ok=True)
    if task_name == "rte":
        _write_rte(data_dir, seed)
    elif task_name == "ocnli":
        _write_ocnli(data_dir, seed)
    else:
        _write_squad(data_dir, seed, v2=task_name == "squad_v2",
                     lexicon=world.CHINESE if task_name == "cmrc2018" else world.ENGLISH)
    corpus = os.path.join(folder, "corpus.txt")
    with atomic_file(corpus, encoding="utf-8") as f:
        f.write("\n".join(_corpus_lines(task_name, seed + 100)) + "\n")
    vocab_file = _vocabulary(task_name, corpus, folder)
    # The trainer may have stopped below DEMO_VOCABULARY: the model takes what it made.
    size = load_tokenizer(vocab_file, host=True).vocabulary_size
    with atomic_file(os.path.join(folder, "model.json"), encoding="utf-8") as f:
        json.dump(AlbertConfig(vocabulary_size=size, **DEMO_MODEL).to_dict(), f,
                  indent=2)
    return vocab_file


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
    model = os.path.join(folder, "model.json")
    vocab_file = (os.path.join(folder, "wordpiece", "vocab.txt") if task_name in CHINESE_TASKS
                  else os.path.join(folder, "spm.model"))
    if not os.path.isfile(model):  # a second run of the same demo reuses its data
        vocab_file = _generate(task_name, seed, folder, data_dir)
    settings = dict(DEMO_SETTINGS, data_dir=data_dir, vocab_file=vocab_file, model=model)
    if task_name in QA_TASKS:
        settings["task_options"] = {"doc_stride": 64, "max_query_length": 24}
    return settings


def _new_inputs(task_name, seed=7):
    """Raw-text inputs the model has not seen: `{serving input name: text}`."""
    import random

    seed = random.Random(seed).randrange(10**6)
    lexicon = world.CHINESE if task_name in CHINESE_TASKS else world.ENGLISH
    if task_name not in QA_TASKS:
        premise, hypothesis, _ = world.entailment_pairs(seed, 1, lexicon)[0]
        return {"text_a": premise, "text_b": hypothesis}
    context, questions = world.qa_paragraphs(seed, 1, lexicon=lexicon)[0]
    return {"context": context, "question": questions[0][0]}


def finish(task, module):
    """After a demo run: the fine-tuned model answers new raw text, through
    `module`, the serving module its task exports (what TF Serving would run)."""
    import tensorflow as tf

    from albert_tf.startup import native_noise_filtered

    inputs = _new_inputs(task.name)
    # The serving graph's first run (TensorFlow optimises it and runs its kernels for
    # the first time) prints native notes such as oneDNN's DT_INT32 one: filtered as
    # at start-up, anything else passed on.
    with native_noise_filtered():
        outputs = module.serving_default(**{k: tf.constant([v]) for k, v in inputs.items()})
    print()
    for name, text in inputs.items():
        print(f"{name + ':':9} {text}")
    if "answer" in outputs:
        answer = outputs["answer"][0].numpy().decode("utf-8")
        print(f"answer:   {answer or '(no answer)'}")
    else:
        print(f"label:    {outputs['label'][0].numpy().decode('utf-8')}")
