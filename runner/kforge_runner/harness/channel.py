"""The harness's end of the channel: a SOCK_SEQPACKET socket at fd 3, one JSON object per message.

``receive`` returns the next command as a dict (None when the parent closed its end); ``send``
writes one reply. Messages are at most 64 KiB (runner/HARNESS.md, "Transport"). The functions used
are bound when this module is imported, before any candidate code loads.
"""

import json
import os
from typing import Any, Dict, Optional

CHANNEL_FD = 3
MAX_MESSAGE_BYTES = 64 * 1024

_read = os.read
_write = os.write


class ChannelError(Exception):
    """A message that is not one UTF-8 JSON object, or one too large to send."""


class Channel:
    def __init__(self, fd: int = CHANNEL_FD):
        self.fd = fd

    def receive(self) -> Optional[Dict[str, Any]]:
        """The next command; None at end of stream (the parent is gone). One read is one message
        (SOCK_SEQPACKET); a message longer than the limit is a ChannelError."""
        data = _read(self.fd, MAX_MESSAGE_BYTES + 1)
        if not data:
            return None
        if len(data) > MAX_MESSAGE_BYTES:
            raise ChannelError(f"a message of more than {MAX_MESSAGE_BYTES} bytes")
        try:
            message = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise ChannelError(f"not a UTF-8 JSON document: {e}") from None
        if not isinstance(message, dict):
            raise ChannelError("a message must be a JSON object")
        return message

    def send(self, reply: Dict[str, Any]) -> None:
        """Writes one reply (strict JSON: no NaN or Infinity); raises ChannelError when it is
        larger than the limit, before anything is written."""
        data = json.dumps(reply, allow_nan=False, separators=(",", ":")).encode("utf-8")
        if len(data) > MAX_MESSAGE_BYTES:
            raise ChannelError(f"reply of {len(data)} bytes exceeds {MAX_MESSAGE_BYTES}")
        if _write(self.fd, data) != len(data):
            raise ChannelError("a short write on a SOCK_SEQPACKET socket")
