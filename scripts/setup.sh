#!/usr/bin/env bash
# Fresh machine → working cuwrap: install what is missing, build, regenerate the
# bindings from the installed toolkit (showing the coverage report), run the demo.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cuwrap_install_missing
cuwrap_build
echo "== regenerating generated/ from $CUDA_HOME/include"
"$CUWRAP_BUILD/generator/cuwrap-gen" --cuda-include "$CUDA_HOME/include" \
  --output "$CUWRAP_ROOT/generated" --report "$CUWRAP_BUILD/coverage.json"
cmake --build "$CUWRAP_BUILD" -j "$CUWRAP_JOBS"
echo "== demo"
"$CUWRAP_BUILD/examples/demo"
