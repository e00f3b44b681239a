#!/usr/bin/env bash
# The end-to-end tier under every Node.js line package.json `engines` claims besides the one
# running CI. Each line's official binary comes from its npm package (node-<platform>-<arch>, the
# package the `node` npm package installs), fetched with `npm pack` into a cache once and put first
# on PATH, so the tests and every process they spawn (gateway, engines) run on that line.
#
# The project's own node_modules were installed for the CI node; one of them, better-sqlite3, is
# a native addon built for that node's ABI. So each line runs in a throwaway copy of the project
# whose node_modules links to the real one, except better-sqlite3: copied, and built once per line
# (node-gyp, against the headers the line's package ships). Nothing of the project is changed.
#
#   scripts/test-node-lines.sh                 # 22 and 24, the pinned versions below
#   RCPGW_NODE_LINES="24.22.3" scripts/test-node-lines.sh
#   RCPGW_NODE_CACHE=/some/dir                 # where binaries and builds are kept (default ~/.cache/rcp-gateway/node)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"

LINES="${RCPGW_NODE_LINES:-22.23.3 24.22.3}"
CACHE="${RCPGW_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rcp-gateway/node}"
# The suites that run the built gateway and real engines end to end, and the transport contract
# (the fetch transport on each line's own fetch).
TIER=(test/core test/streaming test/upstream)
TARGET="$(node -p 'process.platform + "-" + process.arch')"
NATIVE=better-sqlite3
NATIVE_VERSION="$(node -p "require('./node_modules/$NATIVE/package.json').version")"
NODE_GYP="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"

# The folder of `version`'s package (bin/node, include/ headers), fetched on first use.
node_home() {
  local version="$1" home="$CACHE/$1"
  if [ ! -x "$home/bin/node" ] || [ ! -d "$home/include/node" ]; then
    local work
    work="$(mktemp -d)"
    # npm checks the tarball against the registry's integrity hash.
    npm pack "node-$TARGET@$version" --pack-destination "$work" --silent >/dev/null
    tar -xzf "$work"/node-*.tgz -C "$work"
    rm -rf "$home"
    mkdir -p "$(dirname "$home")"
    mv "$work/package" "$home"
    rm -rf "$work"
  fi
  echo "$home"
}

# better-sqlite3 built for `version`'s ABI: its build/ folder, made on first use.
native_build() {
  local version="$1" home="$2" build="$CACHE/$1/$NATIVE-$NATIVE_VERSION-build"
  if [ ! -f "$build/Release/better_sqlite3.node" ]; then
    local work
    work="$(mktemp -d)"
    cp -a "node_modules/$NATIVE" "$work/$NATIVE"
    rm -rf "$work/$NATIVE/build"
    (cd "$work/$NATIVE" && PATH="$home/bin:$PATH" node "$NODE_GYP" rebuild --release --nodedir="$home" >/dev/null)
    rm -rf "$build"
    mv "$work/$NATIVE/build" "$build"
    rm -rf "$work"
  fi
  echo "$build"
}

# A copy of the working tree (sources, tests, data) whose node_modules links to the project's,
# with the line's own better-sqlite3. The shared spec folder sits beside it, as beside the repo.
project_for() {
  local build="$1" root
  root="$(mktemp -d)"
  mkdir "$root/project"
  [ -e "$REPO/../shared" ] && ln -s "$REPO/../shared" "$root/shared"
  tar -C "$REPO" --exclude=./node_modules --exclude=./dist --exclude=./dist-edge --exclude=./.git -cf - . | tar -C "$root/project" -xf -
  mkdir "$root/project/node_modules"
  for entry in "$REPO"/node_modules/* "$REPO"/node_modules/.bin; do
    [ "$(basename "$entry")" = "$NATIVE" ] || ln -s "$entry" "$root/project/node_modules/"
  done
  cp -a "$REPO/node_modules/$NATIVE" "$root/project/node_modules/$NATIVE"
  rm -rf "$root/project/node_modules/$NATIVE/build"
  cp -a "$build" "$root/project/node_modules/$NATIVE/build"
  echo "$root"
}

status=0
for version in $LINES; do
  home="$(node_home "$version")"
  actual="$("$home/bin/node" --version)"
  if [ "$actual" != "v$version" ]; then
    echo "expected node v$version, $home/bin/node says $actual" >&2
    exit 1
  fi
  root="$(project_for "$(native_build "$version" "$home")")"
  echo "== end-to-end tier on node $actual"
  start=$SECONDS
  # The tier's global setup builds dist/ and dist-edge/ in the copy, with this line's node.
  if (cd "$root/project" && PATH="$home/bin:$PATH" node node_modules/vitest/vitest.mjs run "${TIER[@]}"); then
    echo "== node $actual: passed in $((SECONDS - start)) s"
  else
    echo "== node $actual: FAILED" >&2
    status=1
  fi
  rm -rf "$root"
done
exit $status
