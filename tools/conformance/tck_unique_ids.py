"""pytest plugin for the A2A TCK: give every message it sends its own messageId.

The TCK reuses one messageId per scenario prefix for a whole run (docs/conformance.md,
"The TCK's bugs", 1), which an agent that detects duplicates by messageId answers with the
first task or a refusal. This keeps the prefix the TCK agent reads (tck-input-required-…)
and appends a random suffix, so the run shows what that bug hides. The TCK stays unmodified
on disk; load with: PYTHONPATH=<this folder> pytest -p tck_unique_ids …
"""

import functools
import re
import uuid

from tck.transport.grpc_client import GrpcClient
from tck.transport.http_json_client import HttpJsonClient
from tck.transport.jsonrpc_client import JsonRpcClient

_SUFFIX = re.compile(r"-u[0-9a-f]{12}$")


def _fresh_id(message: object) -> None:
    # In place, so a test that reads message["messageId"] after sending sees the id sent;
    # an earlier suffix is replaced, not stacked, when the TCK sends the same dict again.
    if isinstance(message, dict) and isinstance(message.get("messageId"), str):
        base = _SUFFIX.sub("", message["messageId"])
        message["messageId"] = f"{base}-u{uuid.uuid4().hex[:12]}"


def _wrap(method):
    @functools.wraps(method)
    def send(self, message, *args, **kwargs):
        _fresh_id(message)
        return method(self, message, *args, **kwargs)

    return send


for _client in (GrpcClient, HttpJsonClient, JsonRpcClient):
    for _name in ("send_message", "send_streaming_message"):
        setattr(_client, _name, _wrap(getattr(_client, _name)))
