"""An upstream that speaks MCP by hand, for the bytes the official SDK refuses to write.

Its listing holds three tools; one description carries an escaped lone surrogate (``"\\ud800"``),
which is valid JSON syntax but not Unicode text. ``--listing PATH`` lists the JSON array in that
file instead, sent as written. It speaks over stdio, or with ``--port N`` over HTTP (answers to
POSTs at ``/mcp`` as plain JSON, or with ``--sse`` as an event stream: the smallest streamable
HTTP server). It speaks the handshake era's protocol (``initialize``), or with ``--modern``
2026-07-28's (``server/discover``, each result saying its ``cacheScope``). A call with the argument
``broken`` answers with a lone surrogate in its text. ``--mute`` makes it read requests and
never answer, not even ``initialize``.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MUTE, MODERN, SSE = "--mute" in sys.argv, "--modern" in sys.argv, "--sse" in sys.argv
STAMP = '"cacheScope":"private","resultType":"complete","ttlMs":0,' if MODERN else ""  # what 2026-07-28 adds
TOOLS = (
    '[{"name":"lookup_amber","description":"Look up facts about amber.","inputSchema":{"type":"object"}},'
    '{"name":"broken","description":"Look up facts about \\ud800 broken text.","inputSchema":{"type":"object"}},'
    '{"name":"lookup_basalt","description":"Look up facts about basalt.","inputSchema":{"type":"object"}}]'
)
# ``--page-extra TEXT``: members written into each tools/list result as they are ('"nextCursor":7,')
EXTRA = sys.argv[sys.argv.index("--page-extra") + 1] if "--page-extra" in sys.argv else ""
if "--listing" in sys.argv:
    with open(sys.argv[sys.argv.index("--listing") + 1], encoding="utf-8") as f:
        TOOLS = f.read().strip()


def answer(line: str | bytes) -> str | None:
    """The JSON-RPC answer to one message, or ``None`` for a notification (and when mute)."""
    message = json.loads(line)
    if MUTE or "id" not in message:
        return None
    method, ident = message.get("method"), json.dumps(message["id"])
    if MODERN and method == "server/discover":
        result = (
            '{"cacheScope":"private","resultType":"complete","supportedVersions":["2026-07-28"],'
            '"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"raw","version":"1"}}}'
        )
    elif MODERN and method == "subscriptions/listen":
        error = '{"code":-32601,"message":"Method not found"}'
        return '{"jsonrpc":"2.0","id":' + ident + ',"error":' + error + "}"
    elif method == "initialize":
        result = json.dumps(
            {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        )
    elif method == "tools/list":
        result = "{" + STAMP + EXTRA + '"tools":' + TOOLS + "}"
    elif method == "tools/call" and (message["params"].get("arguments") or {}).get("broken"):
        result = "{" + STAMP + '"content":[{"type":"text","text":"facts \\ud800 broken"}]}'  # a lone surrogate
    elif method == "tools/call":
        name = message["params"]["name"]
        result = "{" + STAMP + json.dumps({"content": [{"type": "text", "text": f"facts from {name}"}]})[1:]
    else:
        result = "{}"
    return '{"jsonrpc":"2.0","id":' + ident + ',"result":' + result + "}"


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        text = answer(body)
        self.send_response(202 if text is None else 200)
        if SSE and text is not None:
            text = f"event: message\ndata: {text}\n\n"
        data = (text or "").encode()
        self.send_header("Content-Type", "text/event-stream" if SSE else "application/json")
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
