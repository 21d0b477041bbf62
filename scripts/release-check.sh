#!/usr/bin/env bash
# release-check: relayr's modules proved as a user gets them, from a module
# proxy and outside the workspace, before a release is tagged.
#
# 1. tools/release checks that no go.mod holds a replace directive and that
#    every module requires its siblings at one version V, then writes a
#    file-system module proxy of every module at V, zipped from this tree
#    with golang.org/x/mod/zip.
# 2. Online, into a module cache of the check's own, made afresh: each module's
#    third-party requirements, as its own go.mod resolves them (not as the
#    workspace does), from the Go module proxy.
# 3. Offline (GOWORK=off, GOPROXY=file://… only, GOFLAGS=-mod=mod, the
#    check's module cache, so no earlier tree's V is used):
#    - every module builds alone;
#    - `go install github.com/relayr-go/relayr/apps/relayr@V` works, and the
#      binary's `relayr version` names V;
#    - examples/filer, a program composing core, Vikunja's driver and the
#      SQLite ledger, builds, files an item once against Vikunja's emulation
#      (created, then existing), and its module graph holds no PostgreSQL
#      driver, NATS client, browser driver or container client;
#    - a product that vendors core alone vendors core and nothing else.
# It prints the module graphs' sizes (core, one tracker, the example, the app).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
GO="${GO:-go}"
# Outside the tree: the modules it unpacks and its module cache hold go.mod
# files, which nothing looking for the tree's modules should find. It is
# removed at the end unless RELEASE_CHECK_DIR names a folder to keep.
work="${RELEASE_CHECK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/relayr-release-check.XXXXXX")}"

step() { printf '\n== release-check: %s\n' "$*"; }
fail() { printf 'release-check: FAIL: %s\n' "$*" >&2; exit 1; }

clean_cache() { [ -d "$1" ] && GOMODCACHE="$1" GOWORK=off "$GO" clean -modcache >/dev/null 2>&1; rm -rf "$1"; }
clean_cache "$work/modcache" || true
rm -rf "$work"
emu=""
finish() {
	[ -z "$emu" ] || kill "$emu" 2>/dev/null || true
	if [ -z "${RELEASE_CHECK_DIR:-}" ]; then clean_cache "$work/modcache" || true; rm -rf "$work"; fi
}
trap finish EXIT
mkdir -p "$work/src" "$work/gobin"

step "no replace directive; siblings at one version"
version="$("$GO" run ./tools/release check | awk '{print $NF}')"
echo "candidate version: $version"

step "a file-system module proxy of every module at $version"
"$GO" run ./tools/release proxy -version "$version" -out "$work/proxy"
mapfile -t modules < <("$GO" run ./tools/release modules)

# Vikunja's emulation, built in the workspace: the example files against it.
"$GO" build -o "$work/emulate" ./fixtures/cmd/emulate

# Outside the workspace from here on.
export GOWORK=off GOFLAGS=-mod=mod GONOSUMDB=github.com/relayr-go/relayr GOTOOLCHAIN=local CGO_ENABLED=0
upstream="$(GOWORK=off "$GO" env GOPROXY)"
realcache="$(GOWORK=off "$GO" env GOMODCACHE)"

# copy_module PATH DEST: the module's zip from the proxy, unpacked to DEST
# (writable, outside the module cache).
copy_module() {
	local dir
	dir="$("$GO" mod download -json "$1@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$dir" ] || fail "$1@$version is not in the proxy"
	rm -rf "$2"
	cp -r "$dir" "$2"
	chmod -R u+w "$2"
}

step "online: each module's own requirements into the check's module cache"
# A module cache of the check's own, made afresh: the shared one may hold
# version $version from an earlier tree, and would answer it for ever.
export GOMODCACHE="$work/modcache"
export GOPROXY="file://$work/proxy,file://$realcache/cache/download,$upstream"
for line in "${modules[@]}"; do
	path="${line#*$'\t'}"
	dest="$work/src/$(basename "$path")-fill"
	copy_module "$path" "$dest"
	(cd "$dest" && "$GO" mod download all >/dev/null) || fail "downloading what $path requires"
	rm -rf "$dest"
done
# What go install resolves and what vendoring core needs are among them.

step "offline: GOPROXY=file:// only"
export GOPROXY="file://$work/proxy,file://$work/modcache/cache/download"
# The checksum database is not asked (no network): the release's own
# modules are in no database before they are tagged, and go install @V
# checks the rest against it, where a user's go does.
export GOSUMDB=off

graph() { (cd "$1" && "$GO" list -m all | wc -l | tr -d ' '); }
declare -A sizes
for line in "${modules[@]}"; do
	dir="${line%%$'\t'*}"
	path="${line#*$'\t'}"
	dest="$work/src/${dir//\//_}"
	copy_module "$path" "$dest"
	echo "go build ./... in $path@$version"
	(cd "$dest" && "$GO" build -o /dev/null ./...) || fail "$path does not build alone"
	sizes[$dir]="$(graph "$dest")"
done

step "go install github.com/relayr-go/relayr/apps/relayr@$version"
GOBIN="$work/gobin" "$GO" install "github.com/relayr-go/relayr/apps/relayr@$version"
got="$("$work/gobin/relayr" version)"
echo "$got"
[[ "$got" == "relayr $version "* ]] || fail "relayr version says \"$got\", not $version"

step "examples/filer: core, one tracker, the SQLite ledger, composed"
ex="$work/src/examples"
(cd "$ex" && "$GO" build -o "$work/filer" ./filer)
(cd "$ex" && "$GO" list -m all) > "$work/filer-modules.txt"
if grep -E 'jackc/pgx|nats-io|chromedp|testcontainers|docker' "$work/filer-modules.txt"; then
	fail "the example's module graph holds the modules above"
fi
echo "its module graph: $(wc -l < "$work/filer-modules.txt") modules, no pgx, NATS, browser or container module"
"$work/emulate" -listen 127.0.0.1:0 -env "$work/vikunja.env" 2>"$work/emulate.log" &
emu=$!
for _ in $(seq 1 100); do [ -s "$work/vikunja.env" ] && break; sleep 0.1; done
[ -s "$work/vikunja.env" ] || fail "the emulation did not start: $(cat "$work/emulate.log")"
# shellcheck disable=SC1091
. "$work/vikunja.env"
first="$("$work/filer" -ledger "$work/filer.db" -key release-check/build-1 -title "Build 1 failed")"
again="$("$work/filer" -ledger "$work/filer.db" -key release-check/build-1 -title "Build 1 failed")"
echo "first run: $first; second run: $again"
[[ "$first" == created* && "$again" == existing* && "${first#created }" == "${again#existing }" ]] ||
	fail "the example did not file once: \"$first\", then \"$again\""
kill "$emu" 2>/dev/null || true

step "a product that vendors core alone"
prod="$work/src/product"
mkdir -p "$prod"
cat > "$prod/go.mod" <<EOF
module example.com/product

go 1.26.0

require github.com/relayr-go/relayr/core $version
EOF
cat > "$prod/main.go" <<'EOF'
package main

import (
	"context"
	"fmt"

	"github.com/relayr-go/relayr/core/binding"
	"github.com/relayr-go/relayr/core/clock"
	"github.com/relayr-go/relayr/core/faketracker"
	"github.com/relayr-go/relayr/core/ledger/memledger"
	"github.com/relayr-go/relayr/core/tracker"
	"github.com/relayr-go/relayr/core/writes"
)

func main() {
	fake := faketracker.New(faketracker.LikePlane, faketracker.WithProject("ops", "OPS"))
	ops := binding.Binding{Tenant: "acme", Workspace: "ops", Connector: &faketracker.Connector{Fake: fake}}
	w := writes.New(writes.Config{Ledger: memledger.New(),
		Connections: binding.NewConnections(clock.System{}, tracker.StaticCredentials{"acme/fake": {Token: "key"}}, ops)})
	for range 2 {
		r, err := w.EnsureItem(context.Background(), writes.EnsureParams{Tenant: "acme", Workspace: "ops", Key: "k", Draft: tracker.Draft{Title: "t"}})
		fmt.Println(r.How, err)
	}
}
EOF
(cd "$prod" && "$GO" mod tidy && "$GO" mod vendor && "$GO" build -mod=vendor -o "$work/product" .)
vendored="$(grep -c '^# ' "$prod/vendor/modules.txt")"
grep '^# ' "$prod/vendor/modules.txt"
[ "$vendored" = 1 ] && grep -q "^# github.com/relayr-go/relayr/core $version\$" "$prod/vendor/modules.txt" ||
	fail "vendoring core vendored $vendored modules"
"$work/product"

step "module graphs (go list -m all, outside the workspace)"
printf '%-32s %s\n' core "${sizes[core]}" adapters/vikunja "${sizes[adapters/vikunja]}" \
	adapters/ledgersqlite "${sizes[adapters/ledgersqlite]}" adapters/ledgerpg "${sizes[adapters/ledgerpg]}" examples "${sizes[examples]}" apps/relayr "${sizes[apps/relayr]}"
[ "${sizes[core]}" = 1 ] || fail "core requires other modules"
echo "release-check: $version passed"
