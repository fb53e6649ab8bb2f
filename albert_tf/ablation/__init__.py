"""Ablation grids: the ALBERT paper's sharing and sentence-task studies on your
corpus and budget (`python -m albert_tf.ablate`).

- `grid`: the variants, parsed from `--grid` (sharing, embedding size,
  sentence task, depth, width, seed).
- `settings`: `AblationSettings`, one budget for every variant.
- `data`: the pretraining records, made once per tokenizer and sentence task,
  with held-out NSP and SOP records.
- `pretrain`: one variant pretrained under the budget and scored on held-out
  text (MLM, and both NSP and SOP as in the paper's Table 5).
- `finetune`: one variant fine-tuned on the given tasks.
- `report`: the table (Markdown, CSV, JSON) and the plots.
- `runner`: `run_grid`, resumable variant by variant.
"""
