"""The service's logs through the standard :mod:`logging` module: one JSON object a line (the default where standard
error is not a terminal), or plain text (``PRECON_SERVICE_LOG_FORMAT=text``, the default on a terminal).

A record carries its structured fields in ``extra={"fields": {...}}``: JSON writes them as members of the line's
object, text as ``name=value`` after the message. Requests are logged on ``precon.access`` (one line each), webhook
delivery attempts on ``precon.webhooks``.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

LogFormat = Literal["auto", "json", "text"]

ACCESS = logging.getLogger("precon.access")
"""One line a request: its id (the answer's ``x-request-id``), operation, version, status, latency, bytes, key id."""


def log_fields(logger: logging.Logger, message: str, fields: dict[str, Any], level: int = logging.INFO) -> None:
    """``logger.log(level, message, extra={"fields": fields})`` without looking for the caller's file and line in
    the stack (which no line of ours shows), a third of the cost of a request's line."""
    if logger.isEnabledFor(level):
        record = logging.LogRecord(logger.name, level, "", 0, message, None, None)
        record.fields = fields
        logger.handle(record)


def chosen_format(wanted: str) -> str:
    """``json`` or ``text``: ``auto`` is text on a terminal, JSON otherwise (a service manager, a file, a pipe)."""
    if wanted in ("json", "text"):
        return wanted
    return "text" if sys.stderr.isatty() else "json"


class JsonFormatter(logging.Formatter):
    """A record as one line of JSON: ``time`` (ISO 8601, UTC), ``level``, ``logger``, ``message``, its ``fields``
    and, for an exception, ``error`` (the traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


class TextFormatter(logging.Formatter):
    """A record as a line of text, its fields as ``name=value`` after the message."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        text = super().formatMessage(record)
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict) and fields:
            text += " " + " ".join(f"{name}={value}" for name, value in fields.items())
        return text


def logging_config(wanted: str = "auto", level: str = "INFO") -> dict[str, Any]:
    """A :func:`logging.config.dictConfig` for the service and uvicorn (``uvicorn.run(log_config=...)``, which
    applies it in each worker process too): every line in the chosen format on standard error."""
    formatter = "json" if chosen_format(wanted) == "json" else "text"
    handler = {"class": "logging.StreamHandler", "formatter": formatter, "stream": "ext://sys.stderr"}
    logger = {"handlers": ["default"], "level": level, "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {
            "json": {"()": "precon.service.logs.JsonFormatter"},
            "text": {"()": "precon.service.logs.TextFormatter"},
        },
        "handlers": {"default": handler},
        "loggers": {
            "precon": logger,
            "uvicorn": logger,
            "uvicorn.error": {"level": level},
            "uvicorn.access": {**logger, "level": "WARNING"},
        },
    }
