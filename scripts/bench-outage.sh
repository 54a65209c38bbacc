#!/usr/bin/env bash
# Writes and cached reads while etcd is down (issue 49's fail-fast measure), one run: a release
# server on a private etcd; cached lists of 100 ConfigMaps and creates (beside raw etcd txns) with
# etcd up, then the same with etcd killed (SIGKILL): every create should answer 503 within ~1 s
# (its p50/p99 are the time to that answer) while lists go on; then etcd is started again on the
# same data and the time from its first healthy answer to the server's first 201 is printed.
#
#   bash scripts/bench-outage.sh             # SECONDS_RUN=5 a phase, 4 clients
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${SECONDS_RUN:-5}
source scripts/bench-lib.sh
start_server etcd 18090 --etcd-servers "$etcd_url"
run "lists of 100 (rv=0), etcd up, 4 clients" etcd --mode list --objects 100 --concurrency 4 --seconds "$seconds"
run "creates, etcd up, 4 clients" etcd --mode create --concurrency 4 --seconds "$seconds" --baseline-etcd "$etcd_url"
kill -9 "$etcd_pid"
wait "$etcd_pid" 2>/dev/null || true
# etcd is gone: no CPU columns from here (its /proc entry is too).
unset 'pid[etcd]'
run "creates, etcd down, 4 clients" etcd --mode create --concurrency 4 --seconds "$seconds"
run "lists of every object (rv=0), etcd down, 4 clients" etcd --mode list --objects 100 --concurrency 4 --seconds "$seconds"
etcd --data-dir "$work/etcd" --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
    --listen-peer-urls http://127.0.0.1:23801 >>"$work/etcd.log" 2>&1 &
until curl -sf "$etcd_url/health" >/dev/null; do sleep 0.01; done
healthy=$(date +%s%N)
code=000
tries=0
until [ "$code" = 201 ]; do
    tries=$((tries + 1))
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
        "${server[etcd]}/api/v1/namespaces/default/configmaps" \
        -d "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"after-$tries\"}}")
done
served=$(date +%s%N)
printf 'first create after etcd is healthy again\tetcd\t201 after %s ms (%s attempts)\t-\t-\n' \
    "$(((served - healthy) / 1000000))" "$tries" >>"$results"
print_summary "Summary (api-load on etcd through an outage; latencies in ms):"
