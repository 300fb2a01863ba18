#!/usr/bin/env bash
# The device checks on a machine with a CUDA GPU (README "On real CUDA"), as one script.
#
# Where the GPU machine has torch but not torchmend's own dependencies (and no network),
# first, on a machine with pip and the same Python (3.12 here) and CPU type, put them
# in .whl/ (ignored by git):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 -d .whl \
#     libcst==1.9.0 pygit2==1.21.0 unidiff==1.0.1 cffi pycparser
#   pip wheel --no-deps -w .whl .
# then run this from the repository root on the GPU machine: bash bench/real_cuda.sh
set -u
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 3
  export PYTHONPATH=/tmp/site
fi
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/real_cuda}
mkdir -p "$OUT"
nvidia-smi -L
python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())" || exit 3
echo "=== 1: tests/test_real_cuda.py and the verify harness and CLI (the simulation on a GPU machine too)"
timeout 170 python3 -m pytest -q -p no:cacheprovider -n 12 tests/test_real_cuda.py tests/test_verify_harness.py \
  tests/test_verify_cli.py 2>&1 | tee "$OUT/t1.log" | tail -40
echo "=== 2: the corpus executed on real CUDA"
TORCHMEND_REAL_DEVICE=1 timeout 200 python3 -m pytest -q -p no:cacheprovider -n 14 tests/test_corpus_exec.py 2>&1 \
  | tee "$OUT/t2.log" | tail -40
echo "=== 3: verify --real-device on the corpus's device scripts"
ls corpus/device/*.py | grep -v -e '\.expected\.py$' -e '\.unsafe\.py$' > "$OUT/device_scripts.txt"
timeout 150 python3 -m torchmend verify --real-device --unsafe-fixes $(cat "$OUT/device_scripts.txt") > "$OUT/t3.log" 2>&1
echo "rc=$?"
tail -3 "$OUT/t3.log"
grep -E -A3 "NOT verified|could not run|: error" "$OUT/t3.log" | head -60
