#!/usr/bin/env bash
# One KernelBench problem at four sizes in one `kforge bench`: four tasks with four names, "4/4
# tasks with a correct kernel", and `kforge resume` of the finished bench asks no model, redoes no
# evaluation and fails no task. Before, every task was named 19_ReLU: the bench reported "1/4" and
# the resume failed three tasks with "cannot rename ...kernel.cpp.tmp...". The model is a local
# OpenAI-format server answering the size-generic relu kernel. Exit 77 when cpu/cpp cannot run.
set -euo pipefail
kforge="$1"
source_home="$2"
server="$3"
work="$(mktemp -d)"
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
{ printf '```cpp\n'; cat "$source_home/tests/fixtures/candidates/relu/honest.cpp"; printf '```\n'; } \
  > "$work/kernel.md"
"$server" --provider openai --port-file "$work/port" --generation "$work/kernel.md" \
  --log "$work/requests.log" &
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
cat > "$work/models.toml" <<TOML
[[models]]
id = "fake"
provider = "openai"
endpoint = "http://127.0.0.1:$(cat "$work/port")/v1"
api_key_env = "FAKE_OPENAI_KEY"
TOML
export FAKE_OPENAI_KEY="sk-fake-0123456789abcdefghijkl"
{
  for dim in 256 512 1024 2048; do
    printf '[[task]]\nsource = "kernelbench:level1#19"\noverrides = { batch_size = 4, dim = %s }\n\n' "$dim"
  done
} > "$work/sizes.toml"
set +e
"$kforge" bench "$work/sizes.toml" --target cpu/cpp --model fake --models "$work/models.toml" \
  --iterations 1 --no-time --jobs 4 --out "$work/bench" > "$work/first.txt" 2>&1
code=$?
set -e
cat "$work/first.txt"
if grep -q "cannot run here" "$work/first.txt"; then exit 77; fi
[ "$code" = 0 ] || { echo "the bench exited $code"; exit 1; }
grep -q "4/4 tasks with a correct kernel" "$work/first.txt" || { echo "not 4/4"; exit 1; }
[ "$(ls "$work/bench/best" | wc -l)" = 4 ] || { echo "not four best folders"; ls "$work/bench/best"; exit 1; }
asked="$(wc -l < "$work/requests.log")"
"$kforge" resume "$work/bench" > "$work/second.txt" 2>&1 || { cat "$work/second.txt"; echo "the resume failed"; exit 1; }
cat "$work/second.txt"
grep -q "4/4 tasks with a correct kernel" "$work/second.txt" || { echo "resume: not 4/4"; exit 1; }
if grep -qi "cannot rename\|failed" "$work/second.txt"; then echo "the resume failed a task"; exit 1; fi
[ "$(wc -l < "$work/requests.log")" = "$asked" ] || { echo "the resume asked the model again"; exit 1; }
echo "four sizes are four tasks, 4/4 correct, and the resume redid nothing"
