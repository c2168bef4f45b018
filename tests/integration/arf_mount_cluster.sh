#!/bin/sh
# arf_mount_cluster.sh: arf_mount.sh's checks on a cluster (issue 18: the ARF suites also run
# on 1 metadata + 3 data servers): the same shell tools, ENOSPC when the data servers fill,
# the metadata server's kill -9 and restart, and fsck --cluster and of every image at the end.
#
#   BUILD=build sh tests/integration/arf_mount_cluster.sh     prints "N passed, N failed" last
CLUSTER=${CLUSTER:-3}
export CLUSTER
exec sh "$(dirname "$0")/arf_mount.sh"
