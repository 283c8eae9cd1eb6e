"""PySpark's names for JVM classes, resolved once per gateway instead of once per Column call.

PySpark's classic Column API reaches the JVM through names the gateway resolves on every use:
``sc._jvm.functions.col(...)`` asks py4j for ``functions`` and then for ``col``, and
``sc._jvm.PythonUtils.toSeq(...)`` for ``PythonUtils``, each a round trip. py4j resolves an
unqualified name by trying it as a class of the default package first: the JVM's class loader then
searches every jar on the class path (about 250, more with Delta's package) before the name fails
and py4j tries the view's imports. Building the eleven checks' DataFrames over data/samples asked
for ``functions`` 1,689 times and ``PythonUtils`` 626 times — a third of the JVM's samples while the
checks were built were class-loader searches that failed.

A class's name and its static methods do not change while its JVM runs, so :func:`install` puts a
view on the session's gateway that keeps each class it resolved, and each class keeps its
methods. Only classes and methods are kept: packages, fields and failed lookups go to the JVM as
before.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView


def _remembered(obj: Any, store: str, name: str, resolve: Any, keep: Any) -> Any:
    """``resolve(obj, name)``, answered from ``obj.<store>`` when it was kept there before; what
    ``keep`` turns a fresh answer into is kept (None: not kept). ``store`` is read from the instance
    dict: before ``__init__`` sets it, a lookup must not recurse into ``__getattr__``."""
    kept = obj.__dict__.get(store)
    found = kept.get(name) if kept is not None else None
    if found is None:
        found = resolve(obj, name)
        remembered = keep(found) if kept is not None else None
        if remembered is not None:
            kept[name] = found = remembered
    return found


class _MethodCachingClass(JavaClass):
    """A ``JavaClass`` whose static methods are looked up in the JVM once."""

    def __init__(self, fqn: str, gateway_client: Any) -> None:
        super().__init__(fqn, gateway_client)
        self._ea_members: dict[str, JavaMember] = {}

    def __getattr__(self, name: str) -> Any:
        return _remembered(self, "_ea_members", name, JavaClass.__getattr__,
                           lambda found: found if type(found) is JavaMember else None)


class CachingJVMView(JVMView):
    """The gateway's ``JVMView`` (same id, so the same imports) that resolves a class name once."""

    def __init__(self, view: JVMView) -> None:
        super().__init__(view._gateway_client, view._jvm_name, id=view._id)
        self._ea_classes: dict[str, JavaClass] = {}

    def __getattr__(self, name: str) -> Any:
        return _remembered(self, "_ea_classes", name, JVMView.__getattr__, self._methods_cached)

    def _methods_cached(self, found: Any) -> JavaClass | None:
        if type(found) is not JavaClass:
            return None
        return _MethodCachingClass(found._fqn, self._gateway_client)


def install(spark: Any) -> None:
    """Resolve JVM names once on ``spark``'s gateway (a classic session; idempotent)."""
    from pyspark import SparkContext

    view = SparkContext._jvm
    if view is None or isinstance(view, CachingJVMView):
        return
    cached = CachingJVMView(view)
    SparkContext._jvm = cached
    if getattr(spark, "_jvm", None) is view:
        spark._jvm = cached
