"""The patterns of framing (physical lines of log files -> log records, one per log event);
:mod:`epoch_audit.bronze.framing` applies them in the ingest pass:

1. strip wrappers — remove the agent/container prefix a collector added (Kubernetes CRI,
   docker-compose, journald/syslog, a second program's timestamp) and turn log-platform CSV
   exports into a plain line; the inner line is what the parsers see (reference §8);
2. mark record starts — recognise the first line of an event: Kafka default pattern
   ``[%d] %p %m (%c)``, Strimzi ``%d{ISO8601} %p %m (%c) [%t]`` (and its log4j2 variant), or the
   Seastar layout of Redpanda (§7.1). Any other line continues the record above it (multi-line
   messages, Java stack traces);
3. group records — attach continuation lines to their record and split the first line into
   time, level, logger, thread and message (``LOGGER_TAIL``, ``MULTI_LOGGER_TAIL``, ``SEASTAR_SRC``).

Secrets (``REDACTIONS``) are replaced before anything stores or logs a line.
"""

from __future__ import annotations

LEVELS = "TRACE|DEBUG|INFO|WARN|ERROR|FATAL"
_TS = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}"

# Wrappers (reference §8): prefixes to strip, outermost first.
CRI_PREFIX = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}) (?:stdout|stderr) [FP] "
JOURNALD_PREFIX = r"[A-Z][a-z]{2} [ 0-9]\d \d{2}:\d{2}:\d{2} \S+ [^\s:\[]+(?:\[\d+\])?: "
COMPOSE_PREFIX = r"[A-Za-z][A-Za-z0-9_.-]* *\| "
# A Kafka line embedded after another program's prefix (two timestamps on one line).
EMBEDDED_PREFIX = r"[^\[].*?(?=\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) )"
CSV_EXPORT = r'^"([^"]*)","(' + LEVELS + r')","([^"]*)","((?:[^"]|"")*)"$'

# First-line patterns.
KAFKA_START = r"^\[(" + _TS + r")\] (" + LEVELS + r") (.*)$"
STRIMZI_START = r"^(" + _TS + r") (" + LEVELS + r") (.*)$"
# Strimzi log4j2 alternative: %d{yyyy-MM-dd HH:mm:ss} %-5p [%t] %c{1}:%L - %m%n
STRIMZI2_START = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (" + LEVELS + r") *\[([^\]]*)\] (\S+):(\d+|\?) - (.*)$"
SEASTAR_START = (
    r"^(TRACE|DEBUG|INFO|WARN|ERROR) +(" + _TS + r") \[shard +(\d+)(?: *: *([\w-]+) *)?\] (\S+) - (.*)$"
)
# The logger tail of a Kafka message: ` (<logger>)` optionally followed by Strimzi's ` [<thread>]`.
LOGGER_TAIL = r"^(.*) \(([^()\s]+)\)(?: \[([^\]]*)\])?$"
SEASTAR_SRC = r"^((?:\[[^\]]*\] )?)([\w.+-]+\.(?:cc|h|cpp|hh):\d+) - (.*)$"
# log4j prints "%m (%c)": a multi-line message has its logger tail on the message's last line, a
# stack trace comes after the tail: without a tail on the first line, the first later line ending
# with one holds it.
MULTI_LOGGER_TAIL = r"(?s)^(.*?) \(([^()\s]+)\)(?: \[([^\]]*)\])?(?:\n.*)?$"


# Secrets (issue #19): values of keys naming a secret, and the configs Kafka itself types PASSWORD
# (ConfigDef.Type.PASSWORD: ssl.key.password, ssl.keystore.password, ssl.truststore.password,
# ssl.keystore.key, ssl.keystore.certificate.chain, ssl.truststore.certificates, sasl.jaas.config,
# sasl.oauthbearer ...client.secret, delegation.token.secret.key, password.encoder.secret ...), in
# any listener/prefix form (``listener.name.sasl_ssl.plain.sasl.jaas.config``).
REDACTED = "[redacted]"
_SECRET_WORDS = (
    "password", "passwd", "secret", "token", "credentials", "sasl.jaas.config", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.certificates", "basic.auth.user.info",
)
_SECRET_KEY = r"[A-Za-z0-9_.-]*(?:" + "|".join(w.replace(".", r"\.") for w in _SECRET_WORDS) + r")[A-Za-z0-9_.-]*"
# Kafka prints an unset password as null and a set one as [hidden]: nothing to hide there.
_NOT_SECRET = r"(?!null\b|\[hidden\]|\[redacted\])"
# (pattern, replacement), applied in order; every pattern is case-insensitive.
REDACTIONS: list[tuple[str, str]] = [
    # A JAAS config is one value up to its closing ";": usernames and passwords inside it.
    (r"(?i)(sasl\.jaas\.config[\"']?\s*[=:]\s*+)(?![\"'])" + _NOT_SECRET + r"[^;\n]*;?", "$1" + REDACTED),
    # Quoted values: JSON "key":"v", key = "v", password="v" (inside a JAAS line of another key).
    (r"(?i)(" + _SECRET_KEY + r"[\"']?\s*[=:]\s*)\"" + _NOT_SECRET + r"[^\"]*\"", "$1\"" + REDACTED + "\""),
    (r"(?i)(" + _SECRET_KEY + r"[\"']?\s*[=:]\s*)'" + _NOT_SECRET + r"[^']*'", "$1'" + REDACTED + "'"),
    # Bare values: key=v, key = v, key: v (up to a blank or a separator).
    (r"(?i)(" + _SECRET_KEY + r"\s*[=:]\s*)" + _NOT_SECRET + r"[^\s\"',;)}\]]+", "$1" + REDACTED),
    # A config record or dump naming the key in one field and the value in the next.
    (r"(?i)(\"name\"\s*:\s*\"" + _SECRET_KEY + r"\"\s*,\s*\"value\"\s*:\s*)\"" + _NOT_SECRET + r"[^\"]*\"",
     "$1\"" + REDACTED + "\""),
]
# Cheap test first: almost no line names a secret, and those skip every regex.
SECRET_HINTS = ("passw", "secret", "token", "credential", "jaas", "ssl.keystore", "ssl.truststore", "user.info")
