#!/usr/bin/env bash
# skaffold's custom builder where there is no Docker (skaffold.yaml, profile lab): builds $IMAGE from
# services/Dockerfile with buildah (vfs storage, chroot isolation: no daemon, no privileges beyond
# root's), the service named by the image (suite-<service>), and pushes it when skaffold asks
# ($PUSH_IMAGE), over plain HTTP to a localhost registry (k8s/registry.yaml).
#   skaffold sets IMAGE, PUSH_IMAGE and BUILD_CONTEXT; the argument, if any, is the Dockerfile's
#   NODE_IMAGE (the lab: localhost/node:24, which `cluster.sh images` built into buildah's storage).
set -euo pipefail
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}" BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
: "${IMAGE:?run by skaffold, which sets IMAGE}" "${BUILD_CONTEXT:?run by skaffold, which sets BUILD_CONTEXT}"
name="${IMAGE##*/}"
service="${name%%[:@]*}"
service="${service#suite-}"
args=(--build-arg "SERVICE=$service")
if [ -n "${1:-}" ]; then args+=(--build-arg "NODE_IMAGE=$1"); fi
buildah bud --quiet --layers "${args[@]}" -f "$BUILD_CONTEXT/services/Dockerfile" -t "$IMAGE" "$BUILD_CONTEXT"
if [ "${PUSH_IMAGE:-false}" = true ]; then
  tls=true
  case "$IMAGE" in localhost:* | 127.0.0.1:*) tls=false ;; esac
  buildah push --quiet --tls-verify="$tls" "$IMAGE"
fi
