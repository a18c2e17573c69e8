#!/usr/bin/env bash
# scripts/run-main.sh: set up and build (build/), then run the main job: amk-run decoding 32 tokens
# of the bundled tiny Llama (examples/tiny_llama/, weights from the Hugging Face reference fixture)
# on the CPU VM, or on the GPU when this build has one. Exit status is amk-run's (see README).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh build

exec build/tools/amk-run examples/tiny_llama/program.json \
  --weights tests/fixtures/tiny_llama/model.safetensors \
  --prompt-ids 1,17,345,901,22,7,512,64 --max-tokens 32 --backend auto
