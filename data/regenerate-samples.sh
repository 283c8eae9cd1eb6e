#!/usr/bin/env bash
# Regenerates data/samples/ (small simulated clusters with injected faults and their truth.jsonl).
# Deterministic: the same simulator code gives byte-identical files.
set -euo pipefail
cd "$(dirname "$0")/.."
EA=${EPOCH_AUDIT:-.venv/bin/epoch-audit}
rm -rf data/samples
common=(--brokers 3 --partitions 4 --hours 2 --produce-rate 0.05 --faults default --no-progress)
"$EA" simulate --out data/samples/kafka-kraft --seed 1 --mode kafka-kraft --kafka-version 3.6 --cluster-id kraft-1 "${common[@]}"
"$EA" simulate --out data/samples/kafka-zk --seed 5 --mode kafka-zk --kafka-version 3.4.0 --cluster-id zk-1 "${common[@]}"
"$EA" simulate --out data/samples/kafka-zk-strimzi --seed 6 --mode kafka-zk --kafka-version 3.9 --cluster-id zk-2 --strimzi "${common[@]}"
"$EA" simulate --out data/samples/redpanda --seed 7 --mode redpanda --cluster-id rp-1 "${common[@]}"
