"""The check stage on a bench lake, whole history vs carried traffic (docs/performance.md).

Usage: python benchmarks/carry_window.py <bench lake (epoch-audit bench --work DIR: DIR/lake)> <lag minutes>

Re-checks the lake's clusters twice: first from the whole history (no carry; it writes the carry
for a horizon <lag> minutes before the latest traffic), then from that horizon on plus the carried
events; prints both stage times, what each read and whether the two gold tables are identical.
"""
import json
import sys
import time

from pyspark.sql import functions as F

from epoch_audit.config import load_config
from epoch_audit.lake.storage import open_storage
from epoch_audit.lake.tables import GOLD_STATE_TABLE
from epoch_audit.spark import get_spark
from epoch_audit.stages.carry import CARRY_TABLE
from epoch_audit.stages.check import run_checks

lake, lag = sys.argv[1], int(sys.argv[2])
cfg = load_config(None, "local")
cfg.spark.driver_memory = "2g"
cfg.incremental.traffic_lag_minutes = lag
spark = get_spark(cfg.spark.master, cfg.spark.driver_memory, cfg.spark.conf)
st = open_storage(spark, lake, "delta-rs")
ev = st.read("bronze/events")
traffic = ev.where(F.col("event_class") == "traffic")
print(traffic.agg(F.min("event_time"), F.max("event_time"), F.count(F.lit(1))).collect())

def restale(drop_carry=False):
    st.overwrite(GOLD_STATE_TABLE, st.read(GOLD_STATE_TABLE).limit(0))
    if drop_carry and st.exists(CARRY_TABLE):
        st.overwrite(CARRY_TABLE, st.read(CARRY_TABLE).limit(0))

out = {}
for name, drop in (("whole", True), ("windowed", False)):
    restale(drop)
    t0 = time.perf_counter()
    res, _ = run_checks(spark, st, cfg, f"m-{name}")
    out[name] = {"seconds": round(time.perf_counter() - t0, 1), "carried_traffic": res.detail["carried_traffic"],
                 "ids": sorted(r["violation_id"] for r in st.read("gold/violations").select("violation_id").collect())}
    carry = st.read(CARRY_TABLE)
    out[name]["carry_rows"] = carry.where(F.col("event_type") != "carry_horizon").count()
print(json.dumps({k: {**v, "ids": len(v["ids"])} for k, v in out.items()}, indent=1))
print("same gold:", out["whole"]["ids"] == out["windowed"]["ids"])
