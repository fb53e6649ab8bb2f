#!/usr/bin/env bash
# Pretrains a small ALBERT on a plain-text corpus for a bounded number of
# steps, then fine-tunes RTE and MRPC from it and from random initialisation.
#
#   bash bench/gutenberg_pretraining.sh [CORPUS_DIR] [GLUE_DIR] [WORK_DIR]
#
# Defaults: ../shared/data/corpus/gutenberg, ../shared/data/glue, runs/gutenberg.
# The first book (sorted by name) is held out as the MLM/SOP evaluation text.
# PRETRAIN_STEPS (default 600) and FINETUNE_EPOCHS (default 3) bound the time.
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS=${1:-../shared/data/corpus/gutenberg}
GLUE=${2:-../shared/data/glue}
WORK=${3:-runs/gutenberg}
PY=${PYTHON:-python}
STEPS=${PRETRAIN_STEPS:-600}
EPOCHS=${FINETUNE_EPOCHS:-3}
mkdir -p "$WORK"
books=$(ls "$CORPUS"/*.txt | sort)
eval_book=$(echo "$books" | head -1)
train_books=$(echo "$books" | tail -n +2 | paste -sd, -)

cat > "$WORK/small.json" <<JSON
{"vocabulary_size": 8000, "num_layers": 6, "num_heads": 4, "hidden_dim": 256,
 "intermediate_dim": 1024, "embedding_dim": 128, "num_groups": 1,
 "num_inner_repetitions": 1, "sharing": "all", "dropout": 0.0,
 "attention_dropout": 0.0, "max_sequence_length": 128, "num_segments": 2,
 "activation": "gelu_approximate", "layer_norm_epsilon": 1e-12,
 "initializer_range": 0.02}
JSON

$PY -m albert_tf.tokenizer train --input="$train_books" --vocab_size=8000 \
    --output="$WORK/spm" --lowercase
for split in train eval; do
  if [ $split = train ]; then input=$train_books; dupe=5; seed=1; else input=$eval_book; dupe=1; seed=2; fi
  $PY -m albert_tf.create_pretraining_data --input="$input" --input_format=prose \
      --vocab_file="$WORK/spm.model" --output="$WORK/data/$split" --max_seq_length=128 \
      --max_predictions_per_seq=20 --dupe_factor=$dupe --random_seed=$seed --noprogress
done
time $PY -m albert_tf.pretrain --input_files="$WORK/data/train-*" \
    --eval_files="$WORK/data/eval-*" --eval_batches=40 --vocab_file="$WORK/spm.model" \
    --model="$WORK/small.json" --output_dir="$WORK/pretrain" --max_seq_length=128 \
    --batch_size=64 --train_steps=$STEPS --warmup_steps=$((STEPS / 10)) \
    --learning_rate=0.00176 --log_every=50 --checkpoint_every=200

for task in rte mrpc; do
  dir=$GLUE/${task^^}
  examples=$(($(wc -l < "$dir/train.tsv") - 1))
  steps=$((EPOCHS * examples / 32))
  for init in pretrained random; do
    if [ $init = pretrained ]; then model=(--init_checkpoint="$WORK/pretrain/model")
    else model=(--model="$WORK/small.json" --vocab_file="$WORK/spm.model"); fi
    $PY -m albert_tf.finetune --task=$task --data_dir="$dir" \
        --output_dir="$WORK/$task-$init" "${model[@]}" --max_seq_length=128 \
        --batch_size=32 --train_steps=$steps --warmup_steps=$((steps / 10)) \
        --learning_rate=5e-5 --seed=12345
  done
done
