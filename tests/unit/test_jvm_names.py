"""The session's gateway resolves a JVM class name, and a class its static methods, once."""

from __future__ import annotations

import pytest
from py4j.java_gateway import JavaPackage
from py4j.protocol import Py4JError
from pyspark import SparkContext
from pyspark.sql import functions as F

from epoch_audit import jvm_names
from epoch_audit.jvm_names import CachingJVMView


class _CountingClient:
    """The gateway client, counting the commands sent to the JVM."""

    def __init__(self, client):
        self.client, self.sent = client, []

    def send_command(self, command, *args, **kwargs):
        self.sent.append(command)
        return self.client.send_command(command, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.client, name)


def test_a_class_and_its_methods_are_resolved_once(spark):
    view = SparkContext._jvm
    assert isinstance(view, CachingJVMView)
    counting = _CountingClient(view._gateway_client)
    fresh = CachingJVMView(view)
    fresh._gateway_client = counting
    col = fresh.functions.col  # an unqualified name (PySpark's own imports), then a static method
    first = len(counting.sent)
    assert first == 2
    assert fresh.functions is fresh.functions and fresh.functions.col is col
    assert len(counting.sent) == first  # both answered from the view
    # and the cached method still calls the JVM, with the right answer
    assert col("x").toString() == "x"
    assert fresh.PythonUtils is fresh.PythonUtils  # a class found through a star import


def test_what_is_not_a_class_goes_to_the_jvm_as_before(spark):
    view = SparkContext._jvm
    assert isinstance(view.org, JavaPackage)
    with pytest.raises(Py4JError):
        view.functions.no_such_function_here  # noqa: B018 - the lookup itself must raise
    # a DataFrame built through the cached names is the same as ever
    row = spark.range(3).select(F.sum(F.col("id") + F.lit(1)).alias("n")).collect()[0]
    assert row["n"] == 6


def test_install_is_idempotent(spark):
    view = SparkContext._jvm
    jvm_names.install(spark)
    assert SparkContext._jvm is view and spark._jvm is view
