"""An upstream that speaks MCP over stdio by hand, for the bytes the official SDK refuses to write.

Its listing holds three tools; one description carries an escaped lone surrogate (``"\\ud800"``),
which is valid JSON syntax but not Unicode text. ``--mute`` makes it read requests and never
answer, not even ``initialize``.
"""

from __future__ import annotations

import json
import sys

MUTE = "--mute" in sys.argv
TOOLS = (
    '[{"name":"lookup_amber","description":"Look up facts about amber.","inputSchema":{"type":"object"}},'
    '{"name":"broken","description":"Look up facts about \\ud800 broken text.","inputSchema":{"type":"object"}},'
    '{"name":"lookup_basalt","description":"Look up facts about basalt.","inputSchema":{"type":"object"}}]'
)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if MUTE or "id" not in message:
            continue
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
        elif method == "tools/call":
            name = message["params"]["name"]
            result = json.dumps({"content": [{"type": "text", "text": f"facts from {name}"}]})
        else:
            result = "{}"
        sys.stdout.write('{"jsonrpc":"2.0","id":' + ident + ',"result":' + result + "}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
