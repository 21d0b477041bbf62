#!/usr/bin/env bash
# release: cut relayr's release vX.Y.Z, every module in lockstep.
#
#	scripts/release.sh v0.2.0          # bump, check, commit, tag (nothing pushed)
#	scripts/release.sh -push v0.2.0    # and push main and the tags
#
# It requires every sibling at vX.Y.Z in every go.mod and in go.work's
# replacements (tools/release bump), tidies each module outside the
# workspace as its users resolve it (tools/release tidy), commits that as
# "release vX.Y.Z", runs `make release-check` on it (the modules from a
# file-system proxy, offline), and tags each module at that commit:
# core/vX.Y.Z, adapters/vikunja/vX.Y.Z, apps/relayr/vX.Y.Z, … Users then
#
#	go install github.com/relayr-go/relayr/apps/relayr@vX.Y.Z
#	go get github.com/relayr-go/relayr/adapters/vikunja@vX.Y.Z
set -euo pipefail
cd "$(dirname "$0")/.."
push=false
if [ "${1:-}" = "-push" ]; then push=true; shift; fi
version="${1:-}"
if [ -z "$version" ] || [ $# -ne 1 ]; then
	echo "usage: scripts/release.sh [-push] vX.Y.Z" >&2
	exit 2
fi
if [ -n "$(git status --porcelain)" ]; then
	echo "release: the tree has changes not committed; a release is cut from a commit" >&2
	exit 1
fi
mapfile -t modules < <(go run ./tools/release modules)
for line in "${modules[@]}"; do
	tag="${line%%$'\t'*}/$version"
	if git rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
		echo "release: tag $tag exists already" >&2
		exit 1
	fi
done

go run ./tools/release bump -version "$version"
go run ./tools/release tidy -version "$version"
go run ./tools/release check
if [ -n "$(git status --porcelain)" ]; then
	git commit -q -am "release $version"
fi
make release-check

tags=()
for line in "${modules[@]}"; do
	tag="${line%%$'\t'*}/$version"
	git tag -a "$tag" -m "relayr $version: ${line#*$'\t'}"
	tags+=("$tag")
done
echo "release: tagged ${#tags[@]} modules at $(git rev-parse --short HEAD): ${tags[*]}"
if $push; then
	git push origin HEAD "${tags[@]}"
else
	echo "release: push with: git push origin HEAD ${tags[*]}"
fi
