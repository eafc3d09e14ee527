#!/bin/bash
# usage: bash benchmarks/gpu_batch.sh PROFILE TIMEOUT_S THREADS slug...   (on the GPU machine, from the repository root)
# The scripts come from benchmarks/notebook_script.py; wheels of packages the machine lacks may wait in .whl/.
# Writes $OUT/gpu.tar.gz (OUT defaults to .gpu). A PYTHONPATH or PAPERLIB_CACHE set by the caller reaches the scripts.
OUT=${OUT:-.gpu}; PROFILE=$1; TMO=$2; THR=$3; shift 3
[ ! -d .whl ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=PASSIVE KMP_BLOCKTIME=0   # a caller's PYTHONPATH is kept, after ours
mkdir -p .gpu/out
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; python3 -c "import torch,sys;print(sys.version);print('torch',torch.__version__,torch.cuda.is_available())"; nproc; } > .gpu/out/machine.txt 2>&1
# scripts are built beforehand: python3 benchmarks/notebook_script.py PROFILE THREADS cuda slug...
( while true; do echo "$(date +%s) $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)" >> .gpu/out/gpu_util.txt; sleep 15; done ) &
SAMPLER=$!
for s in "$@"; do
  mkdir -p .gpu/out/$s
  ( start=$(date +%s); timeout $TMO python3 .gpu/$s.py > .gpu/out/$s/log.txt 2>&1; rc=$?;
    echo "{\"paper\": \"$s\", \"rc\": $rc, \"wall_s\": $(( $(date +%s) - start ))}" > .gpu/out/$s/status.json ) &
done
wait $(jobs -p | grep -v "^$SAMPLER$")
kill $SAMPLER
nvidia-smi >> .gpu/out/machine.txt 2>&1
tar czf $OUT/gpu.tar.gz -C .gpu out
for s in "$@"; do echo "$s: $(cat .gpu/out/$s/status.json) $(tail -c 300 .gpu/out/$s/log.txt | tr '\n' ' ')"; done
