"""The wheel spark-submit ``--py-files`` puts on the driver's path reaches the executors' path too
(issue #22: PySpark adds only .zip, .egg and .jar files there; tests/e2e/test_cluster.py runs it on
a real cluster)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from epoch_audit.spark import imported_wheel, ship_imported_wheel


class RecordingContext:
    def __init__(self, application_id: str = "app-1") -> None:
        self.applicationId = application_id
        self.py_files: list[str] = []

    def addPyFile(self, path: str) -> None:  # noqa: N802 (SparkContext's name)
        self.py_files.append(path)


class ClassicSession:
    """What ship_imported_wheel uses of a classic session: its SparkContext."""

    def __init__(self, application_id: str = "app-1") -> None:
        self.sparkContext = RecordingContext(application_id)


@pytest.fixture
def wheel_on_path(tmp_path, monkeypatch) -> tuple[str, Path]:
    """A package importable only from a pure-Python wheel on sys.path, as spark-submit sets the driver up."""
    package = f"wheelprobe_{tmp_path.name.replace('-', '_')}"
    wheel = tmp_path / "dist" / f"{package}-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(f"{package}/__init__.py", "ANSWER = 42\n")
        archive.writestr(f"{package}-0.1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
    monkeypatch.syspath_prepend(str(wheel))
    __import__(package)
    yield package, wheel
    sys.modules.pop(package, None)


def test_a_package_imported_from_a_wheel_ships_as_an_importable_zip(wheel_on_path):
    package, wheel = wheel_on_path
    assert imported_wheel(package) == str(wheel)
    session = ClassicSession()
    shipped = ship_imported_wheel(session, package)
    assert shipped is not None and shipped.endswith(f"{wheel.stem}.zip")
    assert session.sparkContext.py_files == [shipped]  # PySpark puts a .zip on the executors' path
    # what an executor's Python worker does with it: the copy alone imports the package
    probe = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(1, {shipped!r}); "
                            f"import {package}; print({package}.ANSWER, {package}.__file__)"],
                           capture_output=True, text=True, check=True, cwd=Path(shipped).parent)
    assert probe.stdout.split() == ["42", f"{shipped}/{package}/__init__.py"]
    assert ship_imported_wheel(session, package) == shipped  # once per SparkContext
    assert session.sparkContext.py_files == [shipped]
    later = ClassicSession("app-2")  # a new session after the first stopped
    assert ship_imported_wheel(later, package) == shipped
    assert later.sparkContext.py_files == [shipped]


def test_nothing_ships_when_the_package_is_not_from_a_wheel(tmp_path):
    session = ClassicSession()
    assert imported_wheel("epoch_audit") is None  # the tests import it from the source tree
    assert ship_imported_wheel(session) is None
    assert imported_wheel("json") is None
    zipped = tmp_path / "plain.zip"  # a .zip on --py-files is PySpark's own business
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("plainzip_probe/__init__.py", "")
    sys.path.insert(0, str(zipped))
    try:
        __import__("plainzip_probe")
        assert imported_wheel("plainzip_probe") is None
    finally:
        sys.path.remove(str(zipped))
        sys.modules.pop("plainzip_probe", None)
    assert session.sparkContext.py_files == []
