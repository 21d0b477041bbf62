#!/usr/bin/env bash
# fuzz.sh runs every fuzz target in the repository for a while each:
#
#   scripts/fuzz.sh 30000x    # make test: a short run of each
#   scripts/fuzz.sh 300000x   # make fuzz
#
# Counts, not durations: with a duration, Go 1.26's fuzz coordinator can fail
# a target with a bare "context deadline exceeded" as the time runs out,
# having found nothing (golang/go#75804, fixed in Go 1.27). A count has no
# deadline to race. A duration still works where that flake is acceptable.
#
# It finds the targets itself (a `func Fuzz…` in a _test.go file, confirmed by
# `go test -list`), runs each alone from its module's folder (go test -fuzz
# takes one package and one target), and fails when any fails. A failing
# input is kept under the package's testdata/fuzz/<Target>/, where plain
# `go test` replays it from then on.
#
# FUZZMINIMIZETIME (default 200x) bounds how much a worker minimizes each new
# input: Go's default, 60s, can spend a short run's whole time minimizing.
set -euo pipefail

if [[ $# -ne 1 || ! $1 =~ ^[0-9]+(ns|us|ms|s|m|h|x)$ ]]; then
	echo "usage: $0 <fuzztime>   (a duration such as 5s or 60s, or a count such as 1000x)" >&2
	exit 2
fi
fuzztime=$1
minimize=${FUZZMINIMIZETIME:-200x}
GO=${GO:-go}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

# The tree's own test files (what git tracks or would track): never bin/,
# where make release-check unpacks modules and a module cache.
mapfile -t dirs < <(git ls-files -z --cached --others --exclude-standard -- '*_test.go' |
	grep -zv -e '/testdata/' -e '/vendor/' | xargs -0 -r grep -l '^func Fuzz' | xargs -r -n1 dirname |
	sed 's|^|./|' | sort -u)
if [[ ${#dirs[@]} -eq 0 ]]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi

ran=0
failed=()
for dir in "${dirs[@]}"; do
	gomod=$(cd "$dir" && GOWORK=off $GO env GOMOD)
	if [[ -z $gomod || $gomod == /dev/null ]]; then
		echo "fuzz: $dir is in no module" >&2
		failed+=("$dir (no module)")
		continue
	fi
	moddir=$(dirname "$gomod")
	absdir=$(cd "$dir" && pwd)
	pkg=.
	[[ $absdir == "$moddir" ]] || pkg=./${absdir#"$moddir"/}
	if ! list=$(cd "$moddir" && $GO test -list '^Fuzz' "$pkg"); then
		echo "$list" >&2
		failed+=("$dir (does not build)")
		continue
	fi
	mapfile -t targets < <(grep -E '^Fuzz[A-Za-z0-9_]*$' <<<"$list" || true)
	for target in "${targets[@]}"; do
		echo "== fuzz ${moddir#"$root"/} $pkg $target for $fuzztime"
		ran=$((ran + 1))
		if ! (cd "$moddir" && $GO test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "$pkg"); then
			failed+=("${moddir#"$root"/} $pkg $target")
		fi
	done
done

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "fuzz: ${#failed[@]} failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
echo "fuzz: $ran targets passed, $fuzztime each"
