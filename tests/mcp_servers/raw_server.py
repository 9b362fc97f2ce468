"""An upstream that speaks MCP by hand, for the bytes the official SDK refuses to write.

Its listing holds three tools; one description carries an escaped lone surrogate (``"\\ud800"``),
which is valid JSON syntax but not Unicode text. ``--listing PATH`` lists the JSON array in that
file instead, sent as written. It speaks over stdio, or with ``--port N`` over HTTP (plain JSON
answers to POSTs at ``/mcp``, the smallest streamable HTTP server). A call with the argument
``broken`` answers with a lone surrogate in its text. ``--mute`` makes it read requests and
never answer, not even ``initialize``.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MUTE = "--mute" in sys.argv
TOOLS = (
    '[{"name":"lookup_amber","description":"Look up facts about amber.","inputSchema":{"type":"object"}},'
    '{"name":"broken","description":"Look up facts about \\ud800 broken text.","inputSchema":{"type":"object"}},'
    '{"name":"lookup_basalt","description":"Look up facts about basalt.","inputSchema":{"type":"object"}}]'
)
if "--listing" in sys.argv:
    with open(sys.argv[sys.argv.index("--listing") + 1], encoding="utf-8") as f:
        TOOLS = f.read().strip()


def answer(line: str | bytes) -> str | None:
    """The JSON-RPC answer to one message, or ``None`` for a notification (and when mute)."""
    message = json.loads(line)
    if MUTE or "id" not in message:
        return None
    method, ident = message.get("method"), json.dumps(message["id"])
    if method == "initialize":
        result = json.dumps(
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        )
    elif method == "tools/list":
        result = '{"tools":' + TOOLS + "}"
    elif method == "tools/call" and (message["params"].get("arguments") or {}).get("broken"):
        result = '{"content":[{"type":"text","text":"facts \\ud800 broken"}]}'  # an escaped lone surrogate
    elif method == "tools/call":
        name = message["params"]["name"]
        result = json.dumps({"content": [{"type": "text", "text": f"facts from {name}"}]})
    else:
        result = "{}"
    return '{"jsonrpc":"2.0","id":' + ident + ',"result":' + result + "}"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        text = answer(body)
        self.send_response(202 if text is None else 200)
        data = (text or "").encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # no stream of server messages
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_DELETE = do_GET

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    if "--port" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1])
        ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    for line in sys.stdin:
        text = answer(line)
        if text is not None:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
