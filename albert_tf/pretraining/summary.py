"""Counts over the instances written, and their one-screen report."""

import dataclasses

import numpy as np

REPLACEMENTS = ("mask", "random", "kept")


@dataclasses.dataclass
class Summary:
    """What `create_pretraining_data` produced (mutable counters).

    Attributes:
        documents: documents processed, over all `dupe_factor` passes.
        passes: the passes made over the input (`dupe_factor`).
        instances: instances written.
        tokens: real (unpadded) tokens in them, `[CLS]`/`[SEP]` included.
        replacements: masked tokens by what the input shows there:
            `[MASK]`, a random token, or the original token. (A random token
            that happens to equal the original, p = 1/30,000 per draw, counts
            as kept.)
        span_lengths: `span_lengths[n - 1]`: masked n-grams of n words.
        labels: `labels[k]`: instances with `sop_label` k.
        nsp: whether labels are NSP's (random next) rather than SOP's.
        random_singles: whether single-sentence chunks took B from another
            document (label 1 also in SOP mode: `single_sentence="random_b"`).
        files: the shards written, `counts` records in each.
        other_shards: files named like shards of the same prefix that this
            run did not write (left by a run with another `num_shards`).
        seconds: wall time.
    """

    max_ngram: int
    documents: int = 0
    passes: int = 0
    instances: int = 0
    tokens: int = 0
    replacements: np.ndarray = None
    span_lengths: np.ndarray = None
    labels: np.ndarray = None
    nsp: bool = False
    random_singles: bool = False
    whole_words: bool = False  # words from a segmenter (jieba), not the pieces alone
    files: tuple = ()
    counts: tuple = ()
    other_shards: tuple = ()
    seconds: float = 0.0

    def __post_init__(self):
        self.replacements = np.zeros(len(REPLACEMENTS), np.int64)
        self.span_lengths = np.zeros(self.max_ngram, np.int64)
        self.labels = np.zeros(2, np.int64)

    @property
    def masked(self):
        return int(self.replacements.sum())

    def add(self, instance, mask_id):
        """Counts one `instances.Instance`; `mask_id` is the id of `[MASK]`."""
        self.instances += 1
        self.tokens += len(instance.token_ids)
        shown = instance.token_ids[instance.mask_positions]
        is_mask = shown == mask_id
        is_kept = ~is_mask & (shown == instance.mask_ids)
        self.replacements += [is_mask.sum(), (~is_mask & ~is_kept).sum(), is_kept.sum()]
        self.span_lengths += np.bincount(instance.span_lengths - 1, minlength=self.max_ngram)
        self.labels[instance.sop_label] += 1

    def format(self):
        """The report printed by `python -m albert_tf.create_pretraining_data`."""
        share = lambda part, whole: f"{100.0 * part / max(whole, 1):.1f}%"  # noqa: E731
        spans = int(self.span_lengths.sum())
        task = ("NSP (B from another document)" if self.nsp else
                "SOP (swapped, or a single sentence + B from another document)"
                if self.random_singles else "SOP (swapped)")
        per_pass = self.documents // max(self.passes, 1)
        lines = [
            f"documents:  {per_pass:,} per pass x {self.passes} passes (dupe_factor)",
            f"instances:  {self.instances:,}, label 1 = {task}: "
            f"{share(self.labels[1], self.instances)}",
            f"tokens:     {self.tokens:,} ({self.tokens / max(self.instances, 1):.1f} "
            "per instance, [CLS]/[SEP] included, padding not)",
            f"masked:     {self.masked:,} = {share(self.masked, self.tokens)} of tokens; "
            + ", ".join(f"{name} {share(count, self.masked)}"
                        for name, count in zip(REPLACEMENTS, self.replacements)),
            f"n-grams:    {spans:,} spans; "
            + ", ".join(f"{n} word{'s' if n > 1 else ''} {share(count, spans)}"
                        for n, count in enumerate(self.span_lengths, start=1))
            + ("; words: jieba's (whole-word masking)" if self.whole_words else
               "; words: the vocabulary's pieces"),
            f"throughput: {self.instances / max(self.seconds, 1e-9):,.0f} instances/s "
            f"({self.seconds:.1f} s)",
            f"wrote {len(self.files)} shard(s):",
        ]
        lines += [f"  {path} ({count:,} records)" for path, count in zip(self.files, self.counts)]
        if self.other_shards:
            lines.append(f"warning: {len(self.other_shards)} other file(s) share the prefix, "
                         f"e.g. {self.other_shards[0]}; a glob over it would read them too")
        return "\n".join(lines)
