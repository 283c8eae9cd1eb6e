"""Local Python workers import PySpark from its installed package, not from ``pyspark.zip``
(``epoch_audit.worker_daemon``: bytecode cached, the same files)."""

from __future__ import annotations

import os
import sys
import zipfile
from pathlib import Path

import pyspark
import pytest

from epoch_audit.spark import workers_import_this_package
from epoch_audit.worker_daemon import without_pyspark_zips

PYSPARK_DIR = Path(pyspark.__file__).resolve().parent
LIB = PYSPARK_DIR / "python" / "lib"


def own_zips() -> list[str]:
    zips = sorted(str(p) for p in LIB.glob("*.zip"))
    assert any(p.endswith("pyspark.zip") for p in zips) and any("py4j-" in p for p in zips), zips
    return zips


def test_the_installed_packages_own_zips_leave_the_path():
    path = [*own_zips(), *sys.path]
    assert without_pyspark_zips(path) == [p for p in path if p not in own_zips()]


def test_another_sparks_zips_stay(tmp_path):
    other = tmp_path / "spark-4.1.1" / "python" / "lib"
    other.mkdir(parents=True)
    zips = [str(other / "pyspark.zip"), str(other / "py4j-0.10.9.9-src.zip")]
    for z in zips:
        zipfile.ZipFile(z, "w").close()
    path = [*zips, *sys.path]
    assert without_pyspark_zips(path) == path


def test_zips_stay_when_no_installed_pyspark_is_on_the_rest_of_the_path(tmp_path):
    path = [*own_zips(), str(tmp_path)]
    assert without_pyspark_zips(path) == path


def test_a_path_without_zips_is_unchanged():
    assert without_pyspark_zips(list(sys.path)) == list(sys.path)


def test_workers_import_a_package_from_pythonpath_but_not_from_a_wheel(tmp_path, monkeypatch):
    name = f"daemonprobe_{tmp_path.name.replace('-', '_')}"
    source = tmp_path / "src"
    (source / name).mkdir(parents=True)
    (source / name / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.setenv("PYTHONPATH", str(source))
    assert workers_import_this_package(name)

    wheel = tmp_path / f"{name}w-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{name}w/__init__.py", "")
    monkeypatch.syspath_prepend(str(wheel))
    monkeypatch.setenv("PYTHONPATH", f"{source}{os.pathsep}{wheel}")
    assert not workers_import_this_package(f"{name}w")
    assert workers_import_this_package("epoch_audit")


def test_a_local_sessions_workers_run_the_installed_pyspark(spark):
    if spark.conf.get("spark.python.daemon.module", "pyspark.daemon") != "epoch_audit.worker_daemon":
        pytest.fail("the test session's workers are not started by epoch_audit.worker_daemon")

    def where(batches):
        import pyarrow as pa
        import pyspark as worker_pyspark

        for batch in batches:
            yield pa.RecordBatch.from_pylist(
                [{"id": i, "pyspark": worker_pyspark.__file__} for i in batch.column("id").to_pylist()]
            )

    rows = spark.range(4).repartition(2).mapInArrow(where, "id long, pyspark string").collect()
    assert sorted(r["id"] for r in rows) == [0, 1, 2, 3]
    assert {Path(r["pyspark"]).resolve().parent for r in rows} == {PYSPARK_DIR}
