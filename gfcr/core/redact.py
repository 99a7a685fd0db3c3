"""Credentials out of configuration before it is shown: in a server's answers, reports and logs.

`redact(value)` copies JSON-like data (dicts, lists, strings) with every secret replaced by
`***`: a URL's password (`postgresql://user:***@host/db`, also inside longer text such as a
policy spec `openai:MODEL@https://user:***@host/v1`), `key=value` pairs whose key names a secret
(`?password=***`, libpq's `password=***`), and the whole value of a mapping key that names one
(`token`, `api_key`, `db_password`, …). What it cannot read as a secret it leaves as it is.

>>> redact({"engine": "postgresql+psycopg://gfcr:hunter2@db:5432/chinook", "split": "dev"})
{'engine': 'postgresql+psycopg://gfcr:***@db:5432/chinook', 'split': 'dev'}
>>> redact({"api_key": "sk-123", "tools": ["python"], "max_turns": 4})
{'api_key': '***', 'tools': ['python'], 'max_turns': 4}
>>> redact("openai:m@https://u:pw@host/v1?token=abc&model=m")
'openai:m@https://u:***@host/v1?token=***&model=m'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "***"

# What a key ends with when its value is a secret (any case): `token`, `db_password`, `apiKey`, but
# not `max_tokens` or `password_file`.
_SECRET_NAME = (
    r"(?:password|passwd|secret|secret[_-]?key|token|credentials?|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|authorization)"
)
_SECRET_KEY = re.compile(rf"{_SECRET_NAME}$", re.IGNORECASE)
# scheme://user:PASSWORD@ — a password may hold ':' but not '@', '/', '?', '#' (RFC 3986 userinfo).
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s]*:)[^@/?#\s]+(?=@)")
# NAME=VALUE with a secret NAME, as in a URL's query or a libpq connection string.
_SECRET_PAIR = re.compile(rf"(?P<head>(?<![\w-])[\w-]*?{_SECRET_NAME}=)[^&;\s]+", re.IGNORECASE)


def redact(value: Any) -> Any:
    """`value` with credentials masked (see the module docstring); the input is not changed."""
    if isinstance(value, str):
        return _SECRET_PAIR.sub(rf"\g<head>{MASK}", _URL_PASSWORD.sub(rf"\g<head>{MASK}", value))
    if isinstance(value, Mapping):
        return {
            key: MASK if _SECRET_KEY.search(str(key)) and value[key] not in (None, "") else redact(value[key])
            for key in value
        }
    if isinstance(value, (list, tuple)):
        return type(value)(redact(item) for item in value)
    return value
