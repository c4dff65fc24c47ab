#!/usr/bin/env bash
# A plan on 2 MPI ranks (and a capacity curve on 3) against one process: plan.csv and frontier.csv
# byte-identical, probes.csv identical but for its wall_s column (wall time differs between any
# two runs). Then a worker rank that aborts (and one that throws) mid-plan: the job fails with
# a message naming the rank and the probe, leaves no plan files, keeps the finished probes in
# the cache, and a resumed plan (on 2 ranks, then on 1) runs only what was missing.
#   tests/mpi/plan_ranks_test.sh INFERSCALE MPIEXEC WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

cat >"$work/twenty.yaml" <<'YAML'
plan: twenty
base:
  experiment: twenty
  seed: 5
  trace: {generate: {users: 2000, requests: 1, k: 20}}
  model: llama-3.1-8b
  serving: {k: 20}
  store: {gpu: {capacity: 10%}}
load: {users: 2000, rate_per_s: 30}
slo:
  ttft_ms: {p99: 300}
  tpot_ms: {p99: 40}
search:
  gpu: [a100-80g, l40s, h100, h200, b200]
  serving.mode: [text, kv_inject]
  store.gpu.capacity: [5%, 20%]
probe: {warmup_s: 4, window_s: 12, cooldown_s: 1}
options: {headroom_steps: 1, prune: true}
YAML

# probes.csv without wall_s (column 14), and for a resumed plan without reused (column 6).
columns() { cut -d, -f"$2" "$1"; }
same_plan() {  # DIR_A DIR_B [resumed]
  for f in plan.csv frontier.csv; do
    cmp "$1/$f" "$2/$f" || fail "$f differs: $1 vs $2"
  done
  local keep=1-13,15-
  [ -z "${3:-}" ] || keep=1-5,7-13,15-
  cmp <(columns "$1/probes.csv" $keep) <(columns "$2/probes.csv" $keep) ||
    fail "probes.csv differs: $1 vs $2"
}
probes_run() { sed -n 's/.*probes: \([0-9]*\) run.*/\1/p' "$1"; }

"$bin" plan "$work/twenty.yaml" --out "$work/one" --jobs 1 -q >"$work/one.log"
"${mpi[@]}" -n 2 "$bin" plan "$work/twenty.yaml" --out "$work/two" -q >"$work/two.log"
same_plan "$work/one/twenty" "$work/two/twenty"
total=$(probes_run "$work/one.log")
[ "$total" -gt 10 ] || fail "the plan ran $total probes"
[ "$(probes_run "$work/two.log")" = "$total" ] || fail "2 ranks ran another number of probes"
head -1 "$work/one/twenty/probes.csv" | grep -q ',wall_s,' || fail "probes.csv has no wall_s column"

# A capacity curve (the planner run once per population) on 3 ranks: workers serve every run.
"$bin" plan "$work/twenty.yaml" --out "$work/curve1" --jobs 1 -q --users 1000,4000 >/dev/null
"${mpi[@]}" -n 3 "$bin" plan "$work/twenty.yaml" --out "$work/curve3" -q --users 1000,4000 \
  >/dev/null
cmp "$work/curve1/twenty/curve.csv" "$work/curve3/twenty/curve.csv" || fail "curve.csv differs"
for u in 1000 4000; do same_plan "$work/curve1/twenty/users-$u" "$work/curve3/twenty/users-$u"; done

# Rank 1 aborts when handed its third probe.
status=0
INFERSCALE_TEST_RANK_FAULT=1:2:abort "${mpi[@]}" -n 2 "$bin" plan "$work/twenty.yaml" \
  --out "$work/killed" -q >"$work/killed.log" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "a job whose rank aborted succeeded"
grep -q "inferscale rank 1: stopped by signal 6" "$work/killed.log" ||
  fail "no message naming the aborted rank: $(cat "$work/killed.log")"
grep -q "rank 1: stopped .* while starting probe '" "$work/killed.log" ||
  fail "the message does not say which probe rank 1 was on"
for f in plan.csv frontier.csv probes.csv; do
  [ ! -e "$work/killed/twenty/$f" ] || fail "$f written by a failed plan"
done
[ -z "$(find "$work/killed/twenty" -name '*.tmp.*')" ] || fail "temporary files left"
kept=$(find "$work/killed/twenty/cache" -name '*.json' | wc -l)
[ "$kept" -ge 2 ] || fail "the cache kept $kept finished probes"
[ "$kept" -lt "$total" ] || fail "the cache holds every probe: the fault came too late to test"
# Resumed on 2 ranks: only the missing probes run, and the plan is the same.
"${mpi[@]}" -n 2 "$bin" plan "$work/twenty.yaml" --out "$work/killed" --resume -q >"$work/resumed.log"
same_plan "$work/one/twenty" "$work/killed/twenty" resumed
[ "$(probes_run "$work/resumed.log")" = $((total - kept)) ] ||
  fail "resumed plan ran $(probes_run "$work/resumed.log"), not $((total - kept)) probes"
# And once more on one process: everything from the cache.
"$bin" plan "$work/twenty.yaml" --out "$work/killed" --resume -q >"$work/again.log"
[ "$(probes_run "$work/again.log")" = 0 ] || fail "a complete cache still ran probes"
same_plan "$work/one/twenty" "$work/killed/twenty" resumed

# Rank 1 throws on its third probe: rank 0 names it and the probe, status 1.
status=0
INFERSCALE_TEST_RANK_FAULT=1:2:throw "${mpi[@]}" -n 2 "$bin" plan "$work/twenty.yaml" \
  --out "$work/threw" -q >"$work/threw.log" 2>&1 || status=$?
[ "$status" = 1 ] || fail "a worker's exception gave status $status"
grep -q "^error: rank 1 failed while running probe '.*test fault after 2 probes" \
  "$work/threw.log" || fail "no message naming the failed rank: $(cat "$work/threw.log")"
[ ! -e "$work/threw/twenty/plan.csv" ] || fail "plan.csv written by a failed plan"

# A bad plan file under mpirun: status 2 with the place, like one process.
printf 'plan: bad\nbase: {}\nload: {users: -1}\n' >"$work/bad.yaml"
status=0
"${mpi[@]}" -n 2 "$bin" plan "$work/bad.yaml" --out "$work/bad" -q >"$work/bad.log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "a bad plan file gave status $status: $(cat "$work/bad.log")"
grep -q "bad.yaml:" "$work/bad.log" || fail "the error does not name the file"
echo "ok: $total probes, $kept kept by the failed job"
