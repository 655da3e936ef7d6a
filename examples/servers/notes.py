#!/usr/bin/env python3
"""A small stdio MCP server (Python standard library only) for trying
`portcullis wrap` and `portcullis check` without installing anything.

Tools: `echo` (returns its `message`) and `add` (the sum of `a` and `b`).
Diagnostics go to stderr, as the stdio transport requires.
"""

import json
import sys

SUPPORTED = ("2025-06-18", "2025-11-25")

TOOLS = [
    {
        "name": "echo",
        "description": "Return the message unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string", "maxLength": 1000}},
            "required": ["message"],
        },
    },
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
]


def call(name, arguments):
    if name == "echo":
        return str(arguments["message"])
    if name == "add":
        return str(arguments["a"] + arguments["b"])
    raise KeyError(name)


def answer(message):
    method = message["method"]
    params = message.get("params") or {}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in SUPPORTED else SUPPORTED[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "notes", "version": "1.0.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        try:
            text = call(params["name"], params.get("arguments") or {})
        except (KeyError, TypeError) as err:
            return {"content": [{"type": "text", "text": f"bad call: {err}"}], "isError": True}
        return {"content": [{"type": "text", "text": text}]}
    return None


def main():
    print("notes: ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications and answers need no reply
        result = answer(message)
        if result is None:
            reply = {"jsonrpc": "2.0", "id": message["id"],
                     "error": {"code": -32601, "message": "method not found"}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


main()
