"""A scripted LLM endpoint on loopback, speaking the OpenAI chat-completions and Anthropic messages
wire formats, for running agent loops offline (examples and tests). Each request gets the next
scripted reply; every request body is kept for inspection."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def openai_tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A chat completion whose assistant message calls one tool."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return _openai(message, "tool_calls")


def openai_text(text: str) -> dict[str, Any]:
    """A chat completion with a final text answer."""
    return _openai({"role": "assistant", "content": text}, "stop")


def _openai(message: dict[str, Any], finish: str) -> dict[str, Any]:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [choice],
        "usage": usage,
    }


def anthropic_tool_use(use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A message whose content calls one tool."""
    return _anthropic([{"type": "tool_use", "id": use_id, "name": name, "input": arguments}], "tool_use")


def anthropic_text(text: str) -> dict[str, Any]:
    """A message with a final text answer."""
    return _anthropic([{"type": "text", "text": text}], "end_turn")


def _anthropic(content: list[dict[str, Any]], stop: str) -> dict[str, Any]:
    usage = {"input_tokens": 1, "output_tokens": 1}
    return {"id": "msg_stub", "type": "message", "role": "assistant", "model": "stub", "content": content,
            "stop_reason": stop, "stop_sequence": None, "usage": usage}  # fmt: skip


class StubLLM:
    """Serves ``replies`` in order on 127.0.0.1 (any path); use as a context manager."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                stub.requests.append(json.loads(body or b"{}"))
                reply = stub.replies.pop(0) if stub.replies else {"error": {"message": "no more scripted replies"}}
                data = json.dumps(reply).encode()
                self.send_response(500 if "error" in reply else 200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> StubLLM:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
