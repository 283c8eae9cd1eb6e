"""epoch_audit.objstore on local paths, and what it derives from the environment for an S3 store
(the store itself is exercised against moto's server in tests/e2e/test_object_store.py)."""

from __future__ import annotations

from epoch_audit import objstore


def test_schemes():
    assert objstore.is_remote("s3://b/k") and objstore.is_remote("abfss://c@a.dfs.core.windows.net/p")
    assert objstore.is_remote("gs://b/k") and objstore.is_remote("dbfs:/lake")
    assert not objstore.is_remote("/data/lake") and not objstore.is_remote("lake")
    assert not objstore.is_remote("file:///data/lake") and not objstore.is_remote("C:/lake")
    assert objstore.join("s3://b/lake/", "bronze/events", "_delta_log") == "s3://b/lake/bronze/events/_delta_log"
    assert objstore.name("s3://b/x/broker-1/server.log") == "server.log"


def test_local_files(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.log").write_bytes(b"0123456789")
    (tmp_path / "a" / "y.log").write_bytes(b"ab")
    listed = objstore.list_files(str(tmp_path / "a"))
    assert [(p, size) for p, size, _ in listed] == [
        (str(tmp_path / "a" / "b" / "x.log"), 10), (str(tmp_path / "a" / "y.log"), 2)
    ]
    with objstore.open_input(str(tmp_path / "a" / "b" / "x.log")) as fh:  # a byte range
        fh.seek(4)
        assert fh.read(3) == b"456"
    objstore.move(str(tmp_path / "a" / "y.log"), str(tmp_path / "c" / "d" / "y.log"))
    assert (tmp_path / "c" / "d" / "y.log").read_bytes() == b"ab"
    objstore.write_bytes(str(tmp_path / "r" / "index.html"), b"<html>")
    assert objstore.read_bytes(str(tmp_path / "r" / "index.html")) == b"<html>"
    objstore.delete_dir(str(tmp_path / "c"))
    objstore.delete_dir(str(tmp_path / "never"))
    assert not (tmp_path / "c").exists()
    assert objstore.list_files(str(tmp_path / "never")) == []


def test_reports_root():
    assert objstore.reports_root("lake") == "lake/reports"
    assert objstore.reports_root("file:///data/lake") == "/data/lake/reports"
    assert objstore.reports_root("s3://b/lake") == "s3://b/lake/reports"
    assert objstore.reports_root("s3://b/lake", "/srv/reports") == "/srv/reports"


def test_s3_settings_come_from_the_environment_without_credentials(monkeypatch):
    for key in ("AWS_ENDPOINT_URL_S3", "AWS_S3_LOCKING_PROVIDER", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "never-copied")
    options = objstore.delta_storage_options("s3://b/lake")
    assert options == {
        "AWS_REGION": "eu-west-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
    }
    conf = objstore.spark_s3a_conf()
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert "never-copied" not in repr(options) + repr(conf)
    assert objstore.delta_storage_options("/data/lake") is None
    monkeypatch.delenv("AWS_ENDPOINT_URL")
    assert "spark.hadoop.fs.s3a.endpoint" not in objstore.spark_s3a_conf()
