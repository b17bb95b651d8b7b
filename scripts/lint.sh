#!/usr/bin/env bash
# Format and naming checks over the changed tree (scripts/test.sh, and so CI, runs it):
#   clang-format (.clang-format) on the lines of C++ files changed since BASE (git clang-format),
#   clang-tidy (.clang-tidy; readability-identifier-naming findings are errors) on the changed
#   .cc files of src/, with the compile commands of BUILD_DIR.
# BASE: $KFORGE_LINT_BASE, else the merge base with main when HEAD is not main, else HEAD~1.
# BUILD_DIR: $KFORGE_LINT_BUILD, else build/ci, else build/dev. Exit 1 on a finding.
set -euo pipefail
cd "$(dirname "$0")/.."

base=${KFORGE_LINT_BASE:-}
if [ -z "$base" ] && git rev-parse -q --verify main >/dev/null &&
   [ "$(git rev-parse HEAD)" != "$(git rev-parse main)" ]; then
  base=$(git merge-base HEAD main)
fi
if [ -z "$base" ]; then base=$(git rev-parse -q --verify HEAD~1 || true); fi
if [ -z "$base" ]; then echo "lint: no earlier commit to compare with"; exit 0; fi

mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base" -- \
  'src/*.cc' 'src/*.h' 'include/*.h' 'tests/*.cc' 'tests/*.h' | sort -u)
if [ "${#files[@]}" -eq 0 ]; then echo "lint: no C++ file changed since $base"; exit 0; fi
status=0

if command -v git-clang-format >/dev/null; then
  diff=$(git clang-format --quiet --diff "$base" -- "${files[@]}" || true)
  if [ -n "$diff" ] && ! grep -q "^no modified files\|did not modify" <<<"$diff"; then
    echo "lint: clang-format would change these lines (run: git clang-format $base):"
    echo "$diff" | head -200
    status=1
  fi
else
  echo "lint: git-clang-format not installed (apt-get install clang-format); format not checked"
fi

build=${KFORGE_LINT_BUILD:-}
for d in build/ci build/dev; do
  if [ -z "$build" ] && [ -f "$d/compile_commands.json" ]; then build=$d; fi
done
mapfile -t sources < <(printf '%s\n' "${files[@]}" | grep '^src/.*\.cc$' || true)
if [ "${#sources[@]}" -gt 0 ] && command -v clang-tidy >/dev/null && [ -n "$build" ]; then
  # Only the naming rule decides; the other checks of .clang-tidy are advice.
  if ! clang-tidy -p "$build" --quiet --checks='-*,readability-identifier-naming' \
      --warnings-as-errors='readability-identifier-naming' "${sources[@]}" 2>/dev/null; then
    echo "lint: clang-tidy found names against .clang-tidy's readability-identifier-naming"
    status=1
  fi
elif [ "${#sources[@]}" -gt 0 ]; then
  echo "lint: clang-tidy or compile_commands.json missing; names not checked"
fi
exit $status
