#!/usr/bin/env bash
# demo.sh: the main job.  Installs dependencies, builds, and runs example segments.
# Until the arfd server lands, the examples run in a local VM through pnrun, against a
# region that stands in for server memory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
make -j"$(nproc 2>/dev/null || echo 2)" all >/dev/null
BUILD=build bash examples/run.sh
