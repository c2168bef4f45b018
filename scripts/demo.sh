#!/usr/bin/env bash
# demo.sh: the main job.  Installs dependencies, builds, starts arfd and ships a segment to it.
# First the example runs in a local VM (pnrun), then on a real arfd over loopback tcp (arc),
# and both outputs are checked against grep -F.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" all >/dev/null
BUILD=build sh examples/run.sh
BUILD=build sh examples/remote.sh
