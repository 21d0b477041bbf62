#!/usr/bin/env bash
# image-check: the container image (bin/relayr-image.tar, make image) loaded
# into podman and run as an operator would: `relayr version` and `relayr
# demo` (the whole loop on the container's loopback, no network). It fails,
# never skips, where podman is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
archive="${1:-bin/relayr-image.tar}"
if ! command -v podman >/dev/null 2>&1; then
	echo "image-check: FAIL: podman is not installed (Debian: apt-get install -y podman runc)" >&2
	exit 1
fi
[ -f "$archive" ] || { echo "image-check: FAIL: no $archive (make image writes it)" >&2; exit 1; }
# runc, cgroupfs: crun fails on hybrid cgroups and on raising limits.
podman=(podman --runtime runc --cgroup-manager=cgroupfs)
ref="$("${podman[@]}" load -i "$archive" 2>&1 | sed -n 's/^Loaded image[(s)]*: //p' | tail -1)"
[ -n "$ref" ] || { echo "image-check: FAIL: podman loaded no named image from $archive" >&2; exit 1; }
echo "image-check: loaded $ref"
trap '"${podman[@]}" rmi -f "$ref" >/dev/null 2>&1 || true' EXIT
run=("${podman[@]}" run --rm --network none --ulimit nofile=20000:20000 --ulimit nproc=1024:1024 "$ref")
version="$("${run[@]}" version)"
echo "$version"
[[ "$version" == "relayr "*" linux/amd64" ]] || { echo "image-check: FAIL: relayr version in the image says: $version" >&2; exit 1; }
user="$("${podman[@]}" image inspect --format '{{.Config.User}} {{.Config.WorkingDir}} {{json .Config.Entrypoint}} {{json .Config.Cmd}}' "$ref")"
[ "$user" = '65532:65532 /data ["/relayr"] ["serve"]' ] || { echo "image-check: FAIL: the image's config: $user" >&2; exit 1; }
"${run[@]}" demo | tail -3
echo "image-check: $ref runs relayr version and relayr demo"
