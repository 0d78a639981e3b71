#!/usr/bin/env bash
# Installs the pinned Go tools (helm, kubeconform, yq, vegeta, helm-unittest) into a cache outside the
# clone, so later runs and CI reuse them; skips what is already there. Needs Go.
# Prints the directory to put on PATH:  PATH="$(bash scripts/tools.sh):$PATH"
# (npm test puts that directory on PATH by itself.)
set -euo pipefail
TOOLS="${SUITE_TOOLS:-$HOME/.cache/suite-tools}"
BIN="$TOOLS/go-bin"
export GOBIN="$BIN"
mkdir -p "$BIN"

install() { # name module version
  [ -x "$BIN/$1.$3" ] && return
  echo "tools: go install $2@$3" >&2
  go install "$2@$3" >&2
  cp "$BIN/$1" "$BIN/$1.$3" # the version-stamped copy marks this pinned install as done
}
install helm helm.sh/helm/v4/cmd/helm v4.3.1
install kubeconform github.com/yannh/kubeconform/cmd/kubeconform v0.8.0
install yq github.com/mikefarah/yq/v4 v4.54.1
install vegeta github.com/tsenart/vegeta/v12 v12.13.0

# helm-unittest has replace directives, so go install refuses it: build it from the module source.
# Run it as `helm-unittest CHART_DIR` (the same program the helm plugin runs).
UT=v1.1.2
if [ ! -x "$BIN/helm-unittest.$UT" ]; then
  echo "tools: building helm-unittest $UT" >&2
  dir=$(go mod download -json "github.com/helm-unittest/helm-unittest@$UT" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  tmp=$(mktemp -d); cp -r "$dir/." "$tmp"; chmod -R u+w "$tmp"
  main=$(cd "$tmp" && grep -rl --include=*.go '^package main' . | grep -v _test | head -1 | xargs dirname)
  (cd "$tmp" && go build -o "$BIN/helm-unittest" "$main") >&2
  cp "$BIN/helm-unittest" "$BIN/helm-unittest.$UT"
  rm -rf "$tmp"
fi
echo "$BIN"
