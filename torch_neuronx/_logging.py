"""The ``torch_neuronx`` logger, configured from ``TORCH_NEURONX_LOG_LEVEL`` (and ``TORCH_NEURONX_LOG_FILE``).

TorchNeuron reads ``TORCH_NEURONX_LOG_LEVEL`` as an integer, ``0`` errors, ``1`` warnings, ``2``
info, ``3`` debug (AWS's TorchNeuron environment-variable reference: "when 3, enable debug logs"),
and ``TORCH_NEURONX_LOG_FILE`` as a file the log lines are appended to instead of the console.
The level names (``ERROR``, ``WARNING``, ``INFO``, ``DEBUG``, any case) are accepted too.

Every module of the package logs through ``logging.getLogger(__name__)``, a child of the
``torch_neuronx`` logger, so it needs no import of this module (``compile/`` may import only what
its cache key accounts for). Unset, nothing is configured: the records follow the application's
own ``logging`` setup (warnings and errors reach Python's last-resort handler). Set, the
``torch_neuronx`` logger gets that level and one handler of its own (standard error, or the file),
and stops propagating, so a record is printed once whatever the application configured.

A bad value never breaks ``import torch``: :func:`configure` warns (:class:`LogLevelWarning`)
naming the allowed values and leaves the logger unconfigured.
"""
from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Mapping
from typing import Final

LOGGER_NAME: Final = "torch_neuronx"
LEVEL_VARIABLE: Final = "TORCH_NEURONX_LOG_LEVEL"
FILE_VARIABLE: Final = "TORCH_NEURONX_LOG_FILE"

#: TorchNeuron's integer levels and the level names, to Python's levels.
LEVELS: Final[dict[str, int]] = {
    "0": logging.ERROR, "1": logging.WARNING, "2": logging.INFO, "3": logging.DEBUG,
    "ERROR": logging.ERROR, "WARNING": logging.WARNING, "WARN": logging.WARNING,
    "INFO": logging.INFO, "DEBUG": logging.DEBUG,
}

FORMAT: Final = "[torch_neuronx] %(levelname)s %(name)s: %(message)s"


class LogLevelWarning(UserWarning):
    """``TORCH_NEURONX_LOG_LEVEL`` (or ``TORCH_NEURONX_LOG_FILE``) has a value that cannot be used."""


class _OwnHandler(logging.Handler):
    """Marks the handler :func:`configure` installed, so a second call replaces it."""


class _StreamHandler(logging.StreamHandler, _OwnHandler):
    pass


class _FileHandler(logging.FileHandler, _OwnHandler):
    pass


def parse_level(text: str) -> int:
    """A ``TORCH_NEURONX_LOG_LEVEL`` value as a Python ``logging`` level.

    Raises:
        ValueError: naming the variable and the allowed values.
    """
    level = LEVELS.get(text.strip().upper())
    if level is None:
        raise ValueError(
            f"{LEVEL_VARIABLE}={text!r} is not a log level: use 0 (errors), 1 (warnings), 2 (info) or "
            f"3 (debug), or ERROR, WARNING, INFO, DEBUG"
        )
    return level


def configure(env: Mapping[str, str] | None = None) -> logging.Logger:
    """Configures the ``torch_neuronx`` logger from ``env`` (default ``os.environ``).

    Called once by the autoload (inside ``import torch``); calling it again re-reads the variables
    and replaces the handler it installed before.

    Returns:
        The ``torch_neuronx`` logger.

    Warns:
        LogLevelWarning: a level that is not one of the allowed values (the logger is then left as
            it was), or a log file that cannot be opened (the console is used instead).
    """
    env = os.environ if env is None else env
    logger = logging.getLogger(LOGGER_NAME)
    text = env.get(LEVEL_VARIABLE, "")
    if not text.strip():
        return logger
    try:
        level = parse_level(text)
    except ValueError as err:
        warnings.warn(f"{err}; {LEVEL_VARIABLE} is ignored", LogLevelWarning, stacklevel=2)
        return logger
    for old in [h for h in logger.handlers if isinstance(h, _OwnHandler)]:
        logger.removeHandler(old)
        old.close()
    handler: logging.Handler
    path = env.get(FILE_VARIABLE, "").strip()
    try:
        handler = _FileHandler(path, mode="a", delay=False) if path else _StreamHandler()
    except OSError as err:
        warnings.warn(f"{FILE_VARIABLE}={path!r} cannot be opened ({err}): logging to the console instead",
                      LogLevelWarning, stacklevel=2)
        handler = _StreamHandler()
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


def cxx_record(level: int, name: str, message: str) -> None:
    """The sink of the C++ core's log records (``torch_neuronx._C._set_log_sink``): logs ``message``
    at ``level`` on the logger ``name`` when that level is enabled there.

    The C++ core sends: an op's first run as a host fallback (INFO, ``torch_neuronx.ops.tracking``)
    and an out-of-memory error of a core (ERROR, ``torch_neuronx.device.memory``, as it is raised).

    Args:
        level: a Python ``logging`` level (10 debug, 20 info, 30 warning, 40 error).
        name: the logger, a child of ``torch_neuronx``.
        message: the record's text.
    """
    logger = logging.getLogger(name)
    if logger.isEnabledFor(level):
        logger.log(level, "%s", message)

