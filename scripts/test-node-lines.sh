#!/usr/bin/env bash
# The end-to-end tier under every Node.js line package.json `engines` claims besides the one
# running CI: each line's official binary comes from its npm package (node-<platform>-<arch>,
# the package the `node` npm package installs), fetched with `npm pack` into a cache once and put
# first on PATH, so the tests and every process they spawn (gateway, engines) run on that line.
# The project's own node and node_modules are left as they are.
#
#   scripts/test-node-lines.sh                 # 22 and 24, the pinned versions below
#   RCPGW_NODE_LINES="24.22.3" scripts/test-node-lines.sh
#   RCPGW_NODE_CACHE=/some/dir                 # where binaries are kept (default ~/.cache/rcp-gateway/node)
set -euo pipefail
cd "$(dirname "$0")/.."

LINES="${RCPGW_NODE_LINES:-22.23.3 24.22.3}"
CACHE="${RCPGW_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rcp-gateway/node}"
# The suites that run the built gateway and real engines end to end, and the transport contract
# (the fetch transport on each line's own fetch).
TIER=(test/core test/streaming test/upstream)
TARGET="$(node -p 'process.platform + "-" + process.arch')"

# The node binary of `version`, fetched into the cache on first use.
node_binary() {
  local version="$1" dir="$CACHE/$1"
  if [ ! -x "$dir/bin/node" ]; then
    local work
    work="$(mktemp -d)"
    # npm checks the tarball against the registry's integrity hash.
    npm pack "node-$TARGET@$version" --pack-destination "$work" --silent >/dev/null
    tar -xzf "$work"/node-*.tgz -C "$work"
    mkdir -p "$dir"
    mv "$work/package/bin" "$dir/bin"
    rm -rf "$work"
  fi
  echo "$dir/bin/node"
}

npm run build --silent
status=0
for version in $LINES; do
  binary="$(node_binary "$version")"
  actual="$("$binary" --version)"
  if [ "$actual" != "v$version" ]; then
    echo "expected node v$version, $binary says $actual" >&2
    exit 1
  fi
  echo "== end-to-end tier on node $actual"
  start=$SECONDS
  if PATH="$(dirname "$binary"):$PATH" node node_modules/vitest/vitest.mjs run "${TIER[@]}"; then
    echo "== node $actual: passed in $((SECONDS - start)) s"
  else
    echo "== node $actual: FAILED" >&2
    status=1
  fi
done
exit $status
