"""Per-version log4j configuration: Kafka's shipped appenders and rotation, with the audit's loggers switched on.

Kafka 3.x ships ``config/log4j.properties`` (reload4j, DailyRollingFileAppender rolling every hour); 4.x ships
``config/log4j2.yaml`` (RollingFile, hourly TimeBasedTriggeringPolicy). Both are reproduced appender for appender so
the files and line formats are what a production broker writes; the differences a platform team makes for the audit
are ``state.change.logger`` at TRACE and ``kafka.request.logger`` at DEBUG.

``rotate="minute"`` (``epoch-audit lab --rotate minute``) rolls the same appenders every minute instead of every
hour (the date pattern one field longer), so a one-minute run crosses rotations wherever its events fall: a run
that straddles the hour is what the shipped config makes rare.
"""

from __future__ import annotations

from pathlib import Path

from epoch_audit.lab.fetch import major_version

_PATTERN = "[%d] %p %m (%c)%n"
# The rolled file's date suffix: Kafka ships hourly; minutely rolls inside a one-minute lab run.
ROTATIONS = {"hour": "yyyy-MM-dd-HH", "minute": "yyyy-MM-dd-HH-mm"}
_APPENDERS = (  # appender name, file
    ("kafkaAppender", "server.log"),
    ("stateChangeAppender", "state-change.log"),
    ("requestAppender", "kafka-request.log"),
    ("cleanerAppender", "log-cleaner.log"),
    ("controllerAppender", "controller.log"),
    ("authorizerAppender", "kafka-authorizer.log"),
)
_LOG4J1_LOGGERS = (  # logger, level, appender (None: the root's)
    ("org.apache.zookeeper", "INFO", None),
    ("kafka", "INFO", None),
    ("org.apache.kafka", "INFO", None),
    ("kafka.request.logger", "DEBUG", "requestAppender"),
    ("kafka.network.RequestChannel$", "WARN", "requestAppender"),
    ("org.apache.kafka.controller", "INFO", "controllerAppender"),
    ("kafka.controller", "TRACE", "controllerAppender"),
    ("kafka.log.LogCleaner", "INFO", "cleanerAppender"),
    ("state.change.logger", "TRACE", "stateChangeAppender"),
    ("kafka.authorizer.logger", "INFO", "authorizerAppender"),
)
_LOG4J2_LOGGERS = (
    ("kafka", "INFO", None),
    ("org.apache.kafka", "INFO", None),
    ("kafka.request.logger", "DEBUG", "RequestAppender"),
    ("kafka.network.RequestChannel$", "WARN", "RequestAppender"),
    ("org.apache.kafka.controller", "INFO", "ControllerAppender"),
    ("org.apache.kafka.storage.internals.log.LogCleaner", "INFO", "CleanerAppender"),
    ("org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread", "INFO", "CleanerAppender"),
    ("org.apache.kafka.storage.internals.log.Cleaner", "INFO", "CleanerAppender"),
    ("state.change.logger", "TRACE", "StateChangeAppender"),
    ("kafka.authorizer.logger", "INFO", "AuthorizerAppender"),
)


def _log4j1_properties(date_pattern: str) -> str:
    lines = ["log4j.rootLogger=INFO, stdout, kafkaAppender",
             "log4j.appender.stdout=org.apache.log4j.ConsoleAppender",
             "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout",
             f"log4j.appender.stdout.layout.ConversionPattern={_PATTERN}"]
    for name, file in _APPENDERS:
        prefix = f"log4j.appender.{name}"
        lines += [f"{prefix}=org.apache.log4j.DailyRollingFileAppender", f"{prefix}.DatePattern='.'{date_pattern}",
                  f"{prefix}.File=${{kafka.logs.dir}}/{file}", f"{prefix}.layout=org.apache.log4j.PatternLayout",
                  f"{prefix}.layout.ConversionPattern={_PATTERN}"]
    for logger, level, appender in _LOG4J1_LOGGERS:
        lines.append(f"log4j.logger.{logger}={level}" + (f", {appender}" if appender else ""))
        if appender:
            lines.append(f"log4j.additivity.{logger}=false")
    return "\n".join(lines) + "\n"


def _log4j2_yaml(date_pattern: str) -> str:
    out = ["Configuration:", "  Properties:", "    Property:",
           '      - name: "kafka.logs.dir"', '        value: "."',
           '      - name: "logPattern"', f'        value: "{_PATTERN}"',
           "  Appenders:", "    Console:", "      name: STDOUT", "      PatternLayout:",
           '        pattern: "${logPattern}"', "    RollingFile:"]
    for name, file in _APPENDERS:
        out += [f"      - name: {name[0].upper()}{name[1:]}",
                f'        fileName: "${{sys:kafka.logs.dir}}/{file}"',
                f'        filePattern: "${{sys:kafka.logs.dir}}/{file}.%d{{{date_pattern}}}"',
                "        PatternLayout:", '          pattern: "${logPattern}"',
                "        TimeBasedTriggeringPolicy:", "          modulate: true", "          interval: 1"]
    out += ["  Loggers:", "    Root:", "      level: INFO", "      AppenderRef:",
            "        - ref: STDOUT", "        - ref: KafkaAppender", "    Logger:"]
    for logger, level, appender in _LOG4J2_LOGGERS:
        out += [f"      - name: {logger}", f"        level: {level}"]
        if appender:
            out += ["        additivity: false", "        AppenderRef:", f"          ref: {appender}"]
    return "\n".join(out) + "\n"


def write_logging_config(version: str, folder: Path, rotate: str = "hour") -> list[str]:
    """Write the config for ``version`` into ``folder`` (files rolled every ``rotate``: hour or minute);
    return the JVM options that select it."""
    if major_version(version) < 4:
        path = folder / "log4j.properties"
        path.write_text(_log4j1_properties(ROTATIONS[rotate]))
        return [f"-Dlog4j.configuration=file:{path}"]
    path = folder / "log4j2.yaml"
    path.write_text(_log4j2_yaml(ROTATIONS[rotate]))
    return [f"-Dlog4j2.configurationFile={path}"]
