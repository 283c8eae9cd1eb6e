"""Kafka's jars for a version, resolved from Maven Central with ``mvn`` into a cache folder on first use."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CACHE_ENV = "EPOCH_AUDIT_LAB_CACHE"

# Kafka 3.x logs through slf4j 1.7 to reload4j (log4j 1 properties); 4.x through log4j2. The binding is not a
# dependency of kafka_2.13 in the pom (the distribution's libs/ adds it), so the lab adds what the tarball ships.
_LOG4J1_BINDING = (("org.slf4j", "slf4j-reload4j", "1.7.36"),)
_LOG4J2_BINDING = (
    ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"),
    ("org.apache.logging.log4j", "log4j-core", "2.24.3"),
    ("com.fasterxml.jackson.dataformat", "jackson-dataformat-yaml", "2.19.0"),
)


class LabError(Exception):
    """A lab failure worth one line (exit 2 for bad options or paths, 1 for a cluster that misbehaves)."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def major_version(version: str) -> int:
    return int(version.split(".", 1)[0])


def default_cache() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "epoch-audit" / "lab")


def _pom(version: str) -> str:
    artifacts = [("org.apache.kafka", "kafka_2.13", version), ("org.apache.kafka", "kafka-tools", version)]
    artifacts += _LOG4J1_BINDING if major_version(version) < 4 else _LOG4J2_BINDING
    dependencies = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in artifacts
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n  <modelVersion>4.0.0</modelVersion>\n'
        "  <groupId>epoch-audit</groupId><artifactId>lab-kafka</artifactId><version>1</version>"
        "<packaging>pom</packaging>\n"
        f"  <dependencies>\n{dependencies}\n  </dependencies>\n</project>\n"
    )


def kafka_classpath(version: str, cache: Path | None = None) -> str:
    """The runtime classpath of Kafka ``version`` (broker, tools, ZooKeeper for 3.x, the log4j binding)."""
    folder = (cache or default_cache()) / version
    jars, done = folder / "jars", folder / "jars.complete"
    if not done.exists():
        mvn = shutil.which("mvn")
        if mvn is None:
            raise LabError("mvn: not found on PATH; the lab fetches Kafka's jars with Maven", exit_code=2)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(jars, ignore_errors=True)
        (folder / "pom.xml").write_text(_pom(version))
        print(f"lab: fetching Kafka {version} jars with mvn into {jars}", file=sys.stderr)
        result = subprocess.run(
            [mvn, "-q", "-B", "-f", str(folder / "pom.xml"), "dependency:copy-dependencies",
             f"-DoutputDirectory={jars}", "-DincludeScope=runtime"],
            capture_output=True, text=True,
        )
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-3:]
            raise LabError(f"--kafka {version}: mvn could not resolve kafka_2.13:{version}: {' | '.join(tail)}", 2)
        done.write_text(version + "\n")
    return os.pathsep.join(str(path) for path in sorted(jars.glob("*.jar")))
