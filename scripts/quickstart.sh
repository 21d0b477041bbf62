#!/usr/bin/env bash
# Runs docs/quickstart.md as written: every ```sh block, in order, in one
# shell, in a fresh folder that holds a copy of the repository (the page's
# commands run from the repository's root). Background jobs are stopped on
# any exit. Ports 3456 and 8080 on 127.0.0.1 must be free.
# The steps' own `set -e` ends them at the first command that fails.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
pgid=""
cleanup() {
  # The page's own background jobs (the emulation, relayr) run in the
  # steps' process group: stopped with it, whatever failed.
  if [ -n "$pgid" ]; then kill -- "-$pgid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$root" ls-files -z --cached --others --exclude-standard | (cd "$root" && xargs -0 cp --parents -t "$work" 2>/dev/null) || true
cp "$root/go.work" "$work/" 2>/dev/null || true
script="$work/quickstart-steps.sh"
{
  echo 'set -euo pipefail'
  echo 'set -m'
  awk '/^```sh$/{on=1; next} /^```$/{on=0} on' "$root/docs/quickstart.md"
} > "$script"
cd "$work"
echo "quickstart: running $(grep -c . "$script") lines of docs/quickstart.md in $work"
# Two runs at once (two checkouts' make test) take turns: the page's
# ports are fixed.
exec 9>"${TMPDIR:-/tmp}/relayr-quickstart.lock"
flock 9
setsid bash "$script" &
pgid=$!
if ! wait "$pgid"; then
  echo "quickstart: a step of docs/quickstart.md failed" >&2
  exit 1
fi
pgid=""
echo "quickstart: every step held"
