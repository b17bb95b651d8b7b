#!/usr/bin/env bash
# Every command's --help ends with its exit codes, and docs/exit-codes.md lists the same rows: one
# table in the code (src/cli/exit_codes.h) for both. Fails when a command has no exit codes in
# its --help, when the docs miss a command, or when a row differs.
set -euo pipefail
kforge="$1"
source_home="$2"
doc="$source_home/docs/exit-codes.md"
fail() { echo "FAIL: $*"; exit 1; }
# The subcommands `kforge --help` lists (CLI11: "  NAME   description" under "Subcommands:").
commands=$("$kforge" --help | awk '/^Subcommands:/{on=1; next} on && /^  [a-z]/{print $1}')
[ -n "$commands" ] || fail "kforge --help lists no subcommands"
for c in $commands; do
  from_help=$("$kforge" "$c" --help | awk '/^Exit codes:/{on=1; next} on && /^  [0-9]/{
      code=$1; $1=""; sub(/^ +/, ""); print "| " code " | " $0 " |"}')
  [ -n "$from_help" ] || fail "kforge $c --help states no exit codes"
  from_doc=$(awk -v h="## \`kforge $c\`" '$0==h{on=1; next} /^## /{on=0} on && /^\| [0-9]/' "$doc")
  [ -n "$from_doc" ] || fail "docs/exit-codes.md has no section for kforge $c"
  if [ "$from_help" != "$from_doc" ]; then
    diff <(echo "$from_help") <(echo "$from_doc") || true
    fail "kforge $c: --help and docs/exit-codes.md differ (left: --help, right: the docs)"
  fi
done
echo "PASS: $(wc -w <<< "$commands") commands state their exit codes, as docs/exit-codes.md does"
