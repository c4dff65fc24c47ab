#!/usr/bin/env bash
# A fleet run partitioned over MPI ranks against the same run in one process: requests.csv and
# timeline.json byte-identical, summary.json identical but for the wall-clock figures
# (simulator.wall_s, events_per_s differ between any two runs); on 2 and 3 ranks, with memory
# writes and a host tier (and with a warm store on 2), and on a trace whose arrivals tie (rows
# of equal times from different replicas, ordered as one process orders them). Runs that cannot be partitioned
# (least_loaded, round_robin; nodes) are refused with status 2, naming the reason, writing nothing;
# a rank that aborts or throws mid-run fails the job, named, leaving no results.
#   tests/mpi/fleet_ranks_test.sh INFERSCALE MPIEXEC WORK_DIR
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

cat >"$work/fleet.yaml" <<'YAML'
experiment: fleet
seed: 11
trace: {generate: {users: 2000, requests: 6000, k: 50, arrival: poisson, rate: 60,
                   live_sessions: 2}}
model: llama-3.1-8b
gpu: h200
replicas: 8
router: user_affinity
scheduler: {max_batch_tokens: 8192, max_seqs: 256}
serving: {mode: kv_inject, k: 50, header_tokens: 64, footer_tokens: 16}
store:
  warm: false
  gpu: {capacity: 2%, eviction: lru}
  host: {capacity: 8GB, eviction: lru}
output: {requests_csv: true, timeline: true}
YAML

# Arrivals in groups of 8 at the same instant, equal requests: replicas in lockstep for tens of
# steps, rows of equal finish times ordered by chains that tie far back.
{
  echo "TIMESTAMP,ContextTokens,GeneratedTokens"
  for i in $(seq 0 399); do
    s=$((i / 8))
    printf '2023-11-16 18:%02d:%02d.0000000,100,30\n' $((15 + s / 60)) $((s % 60))
  done
} >"$work/ties.csv"
cat >"$work/ties.yaml" <<YAML
experiment: ties
seed: 3
trace: {generate: {users: 40, requests: 400, k: 1, facts_per_user: 1, facts_per_user_spread: 0,
                   replay: $work/ties.csv}}
model: llama-3.1-8b
gpu: h200
replicas: 4
router: user_affinity
serving: {mode: text, k: 0, header_tokens: 0}
output: {requests_csv: true, timeline: true}
YAML

no_wall() { grep -v -e '"wall_s"' -e '"events_per_s"' "$1"; }
same_run() {  # DIR_A DIR_B
  for f in requests.csv timeline.json; do
    cmp "$1/$f" "$2/$f" || fail "$f differs: $1 vs $2"
  done
  cmp <(no_wall "$1/summary.json") <(no_wall "$2/summary.json") ||
    fail "summary.json differs: $1 vs $2"
  [ "$(ls "$2" | tr '\n' ' ')" = "requests.csv summary.json timeline.json " ] ||
    fail "other files in $2: $(ls "$2")"
}

"$bin" run "$work/fleet.yaml" --out "$work/one" --no-progress >/dev/null
rows=$(($(wc -l <"$work/one/fleet/default/requests.csv") - 1))
[ "$rows" = 6000 ] || fail "one process completed $rows requests"
for n in 2 3; do
  "${mpi[@]}" -n $n "$bin" run "$work/fleet.yaml" --out "$work/ranks$n" --no-progress \
    >"$work/ranks$n.log"
  same_run "$work/one/fleet/default" "$work/ranks$n/fleet/default"
  grep -q "^default " "$work/ranks$n.log" || fail "no table printed by rank 0"
  [ "$(grep -c '^results:' "$work/ranks$n.log")" = 1 ] || fail "more than one rank printed"
done

# A warm store: every user's facts declared at the start (each rank generates only its users').
"$bin" run "$work/fleet.yaml" --set store.warm=true --out "$work/warm1" --no-progress >/dev/null
"${mpi[@]}" -n 2 "$bin" run "$work/fleet.yaml" --set store.warm=true --out "$work/warm2" \
  --no-progress >/dev/null
same_run "$work/warm1/fleet/default" "$work/warm2/fleet/default"

"$bin" run "$work/ties.yaml" --out "$work/ties1" --no-progress >/dev/null
# The test means something only if rows of different replicas share a finish time.
ties=$(awk -F, 'NR > 1 { n[$6] = n[$6] " " $3 } END { for (t in n) { split(n[t], r, " ");
  for (i in r) if (r[i] != r[1]) { c++; break } } print c + 0 }' \
  "$work/ties1/ties/default/requests.csv")
[ "$ties" -gt 10 ] || fail "only $ties finish times shared by two replicas"
for n in 2 3; do
  "${mpi[@]}" -n $n "$bin" run "$work/ties.yaml" --out "$work/ties$n" --no-progress >/dev/null
  same_run "$work/ties1/ties/default" "$work/ties$n/ties/default"
done

for router in least_loaded round_robin; do
  status=0
  "${mpi[@]}" -n 2 "$bin" run "$work/fleet.yaml" --out "$work/$router" --no-progress \
    --set router=$router >"$work/$router.log" 2>&1 || status=$?
  [ "$status" = 2 ] || fail "router $router under 2 ranks gave status $status"
  grep -q "^error: .*fleet.yaml: run 'default': router '$router' cannot be partitioned.*user_affinity" \
    "$work/$router.log" || fail "unclear refusal: $(cat "$work/$router.log")"
  [ ! -e "$work/$router" ] || fail "a refused run wrote $work/$router"
done
# Nodes share their tiers among their replicas: refused until a node's replicas stay on one rank.
status=0
"${mpi[@]}" -n 2 "$bin" run "$work/fleet.yaml" --out "$work/node" --no-progress \
  --set node=hgx-h200-8 >"$work/node.log" 2>&1 || status=$?
[ "$status" = 2 ] || fail "a node preset under 2 ranks gave status $status"
grep -q "nodes (node:) and the disk and remote tiers cannot be partitioned" "$work/node.log" ||
  fail "unclear refusal: $(cat "$work/node.log")"
[ ! -e "$work/node" ] || fail "a refused run wrote $work/node"
# A rank that dies in the middle of a run (rank 1 aborts while rank 0 simulates its part): the
# job fails, the message names the rank and the run, and nothing is left of the run's folder.
status=0
INFERSCALE_TEST_RANK_FAULT=1:0:abort "${mpi[@]}" -n 2 "$bin" run "$work/fleet.yaml" \
  --out "$work/killed" --no-progress >"$work/killed.log" 2>&1 || status=$?
[ "$status" -ne 0 ] || fail "a run whose rank aborted succeeded"
grep -q "inferscale rank 1: stopped by signal 6 .* while simulating its part of run fleet/default" \
  "$work/killed.log" || fail "no message naming the aborted rank: $(cat "$work/killed.log")"
[ ! -e "$work/killed/fleet/default" ] || fail "a failed run left its results"
[ -z "$(find "$work/killed" -name '*.tmp*' 2>/dev/null)" ] || fail "temporary files left"
# A rank that throws: status 1 and its error, with the rank, on one line.
status=0
INFERSCALE_TEST_RANK_FAULT=1:0:throw "${mpi[@]}" -n 2 "$bin" run "$work/fleet.yaml" \
  --out "$work/threw" --no-progress >"$work/threw.log" 2>&1 || status=$?
[ "$status" = 1 ] || fail "a rank's exception gave status $status"
grep -q "^error: rank 1: test fault after 0 runs" "$work/threw.log" ||
  fail "no message naming the failed rank: $(cat "$work/threw.log")"
[ ! -e "$work/threw/fleet/default" ] || fail "a failed run left its results"
[ -z "$(find "$work/threw" -name '*.tmp*' 2>/dev/null)" ] || fail "temporary files left"
echo "ok: $rows requests, $ties shared finish times"
