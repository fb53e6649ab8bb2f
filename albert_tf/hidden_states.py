"""What each layer does to the hidden states: the measurements of Lan et al.
(2020), Figure 1, on any model and any texts.

With `h[0]` the projected embedding output and `h[l]` the output of layer `l`
(1..L, `AlbertBackbone.hidden_states`), layer `l` has input `h[l-1]` and
output `h[l]`. Over every real (non-padding) token of every text, `[CLS]` and
`[SEP]` included:

- `l2_distance`: the mean of `||h[l] - h[l-1]||_2`;
- `cosine_similarity`: the mean cosine of `h[l]` and `h[l-1]`;
- `angle_degrees`: the mean of `degrees(arccos(cosine))`;
- `cosine_to_final`: the mean cosine of `h[l]` and `h[L]` (1 for layer L).

The paper reads smaller, smoother changes from layer to layer in the
all-shared model as its parameters settling towards a fixed point; these
numbers let that be checked, not asserted. Means are over tokens (a long text
weighs more than a short one), computed in float64.
"""

import json
import os

import numpy as np

from albert_tf.io_utils import numbered_lines

STATISTICS = ("l2_distance", "cosine_similarity", "angle_degrees", "cosine_to_final")
_TITLES = {"l2_distance": "L2 distance, layer input to output",
           "cosine_similarity": "cosine similarity, layer input to output",
           "angle_degrees": "angle, layer input to output (degrees)",
           "cosine_to_final": "cosine similarity to the final layer"}


def read_texts(path):
    """The non-blank lines of the UTF-8 file `path`, one text each (line ends stripped).

    Raises:
        ValueError: the file is missing, is not UTF-8 (naming the line) or has no text.
    """
    if not os.path.isfile(path):
        raise ValueError(f"--input={path}: no such file (expected texts, one per line)")
    texts = [line.rstrip("\r\n") for _, line in numbered_lines(path) if line.strip()]
    if not texts:
        raise ValueError(f"{path}: no texts (expected one per line, blank lines skipped)")
    return texts


def encode_texts(tokenizer, texts, max_length):
    """`[CLS] text [SEP]` ids of each text, the text cut to fit `max_length` ids.

    tokenizer: a host tokenizer (`encode_batch`, `cls_id`, `sep_id`).
    Returns (list of id lists, number of texts that were cut).
    """
    sequences, cut = [], 0
    for ids in tokenizer.encode_batch(texts):
        ids = list(ids)
        if len(ids) > max_length - 2:
            ids, cut = ids[:max_length - 2], cut + 1
        sequences.append([tokenizer.cls_id, *ids, tokenizer.sep_id])
    return sequences, cut


def batches(sequences, batch_size, pad_id=0):
    """Model inputs for `sequences` (id lists), similar lengths together.

    Yields dicts of int32 `(batch, width)` arrays: `token_ids`, `segment_ids`
    (all 0: one segment) and `padding_mask`.
    """
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i]))
    for start in range(0, len(order), batch_size):
        chunk = [sequences[i] for i in order[start:start + batch_size]]
        width = max(len(s) for s in chunk)
        token_ids = np.full((len(chunk), width), pad_id, np.int32)
        padding_mask = np.zeros((len(chunk), width), np.int32)
        for row, ids in enumerate(chunk):
            token_ids[row, :len(ids)] = ids
            padding_mask[row, :len(ids)] = 1
        yield {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
               "padding_mask": padding_mask}


def _cosine(a, b):
    """Row-wise cosine of two `(tokens, hidden_dim)` arrays."""
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.sum(a * b, axis=-1) / np.maximum(norms, np.finfo(np.float64).tiny)


class LayerStatistics:
    """Sums of the per-token statistics of every layer, added batch by batch."""

    def __init__(self):
        self.sums = None  # (num_layers, len(STATISTICS))
        self.tokens = 0

    def add(self, states, padding_mask):
        """states: `[h_0, ..., h_L]`, each `(batch, seq, hidden_dim)`;
        padding_mask: `(batch, seq)`, 1 at real tokens."""
        real = np.asarray(padding_mask).astype(bool)
        h = [np.asarray(s, np.float64)[real] for s in states]  # each (tokens, hidden_dim)
        rows = []
        for layer in range(1, len(h)):
            before, after = h[layer - 1], h[layer]
            cosine = _cosine(before, after)
            rows.append([np.linalg.norm(after - before, axis=-1).sum(), cosine.sum(),
                         np.degrees(np.arccos(np.clip(cosine, -1.0, 1.0))).sum(),
                         _cosine(after, h[-1]).sum()])
        sums = np.asarray(rows)
        self.sums = sums if self.sums is None else self.sums + sums
        self.tokens += int(real.sum())

    def result(self):
        """`{"layers": [{"layer": l, <statistic>: mean, ...}, ...], "tokens": N}`."""
        means = self.sums / self.tokens
        layers = [{"layer": layer, **{name: float(value) for name, value in zip(STATISTICS, row)}}
                  for layer, row in enumerate(means, 1)]
        return {"layers": layers, "tokens": self.tokens}


def hidden_state_statistics(backbone, sequences, batch_size=32, pad_id=0, progress=None):
    """The statistics (`LayerStatistics.result()`) of `backbone` on `sequences` (id lists)."""
    statistics = LayerStatistics()
    for inputs in batches(sequences, batch_size, pad_id):
        states = backbone.hidden_states(inputs)
        statistics.add([np.asarray(s, np.float32) for s in states], inputs["padding_mask"])
        if progress is not None:
            progress.update(len(inputs["token_ids"]))
    return statistics.result()


def format_table(label, result):
    """The statistics of one model as a text table, one row per layer."""
    lines = [f"{label}: {result['tokens']:,} tokens",
             f"{'layer':>5}" + "".join(f"{name:>20}" for name in STATISTICS)]
    for row in result["layers"]:
        lines.append(f"{row['layer']:>5}" + "".join(f"{row[n]:>20.6f}" for n in STATISTICS))
    return "\n".join(lines)


def write_json(result, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
        f.write("\n")


def plot(results, path):
    """Writes a PNG of every statistic against the layer, one line per model.

    results: `[(label, result), ...]`, e.g. a shared and an unshared model.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 7.5), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(2, 2)
    for ax, name in zip(axes.flat, STATISTICS):
        for label, result in results:
            layers = [row["layer"] for row in result["layers"]]
            ax.plot(layers, [row[name] for row in result["layers"]], marker="o", label=label)
        ax.set_title(_TITLES[name], fontsize=10)
        ax.set_xlabel("layer")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", fontsize=8)
    figure.savefig(path, dpi=110)
