#!/usr/bin/env bash
# Build kxspy inside Istio's module (its go.mod pins grpc and go-control-plane) through -overlay: no file is written
# into ISTIO_SRC. Output: bin/kxspy.
set -euo pipefail
. "$(dirname "$0")/../env.sh"
here=$(cd "$(dirname "$0")" && pwd)
printf '{"Replace":{"%s/tools/kxspy/main.go":"%s/main.go","%s/tools/kxspy/listen.go":"%s/listen.go"}}\n' \
  "$ISTIO_SRC" "$here" "$ISTIO_SRC" "$here" >"$here/overlay.json"
cd "$ISTIO_SRC" && GOTOOLCHAIN=local GOFLAGS=-buildvcs=false nice -n 10 go build -overlay "$here/overlay.json" -o "$BIN/kxspy" ./tools/kxspy
echo "built $BIN/kxspy"
