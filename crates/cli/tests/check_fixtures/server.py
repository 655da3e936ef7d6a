#!/usr/bin/env python3
"""A tiny stdio MCP server with one deliberate defect per mode, for the
tests of `portcullis check` (stdlib only, no network).

Usage: server.py MODE

  good               a correct server (the control)
  banner             prints a banner on stdout before the initialize response
  log-between        prints a log line on stdout between two responses
  two-frames         writes two frames on one line
  no-final-newline   writes the tools/list response without its newline, then exits 1
  null-id            answers the initialized notification with an "id": null error
  debug-leak         prints a debug line on stdout, but only when DEBUG is set
  answers-notify     answers the initialized notification (reusing the last id)
  silent             reads everything and never answers
  dup-key-crash      crashes (uncaught exception) on a duplicate object key
  lingers            never exits after stdin closes
  bad-schema         an initialize result without serverInfo (caught by --schema-dir)
"""

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"
out = sys.stdout


def write(text):
    out.write(text)
    out.flush()


def send(message):
    write(json.dumps(message, separators=(",", ":")) + "\n")


def reject_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key")
    return dict(pairs)


def result_for(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fixture", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": []}
    return {}


def main():
    if MODE == "banner":
        write("loading..\n")
    last_id = None
    for line in sys.stdin:
        if MODE == "silent":
            continue
        try:
            if MODE == "dup-key-crash":
                message = json.loads(line, object_pairs_hook=reject_duplicates)
            else:
                message = json.loads(line)
        except RecursionError:
            send({"jsonrpc": "2.0", "error": {"code": -32700, "message": "too deep"}})
            continue
        except ValueError:
            if MODE == "dup-key-crash" and "duplicate" in str(sys.exc_info()[1]):
                raise
            send({"jsonrpc": "2.0", "error": {"code": -32700, "message": "parse error"}})
            continue
        if not isinstance(message, dict) or "method" not in message:
            send({"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid request"}})
            continue
        method = message["method"]
        if "id" not in message:
            if MODE == "null-id":
                send({"jsonrpc": "2.0", "id": None,
                      "error": {"code": -32601, "message": "unknown method"}})
            if MODE == "answers-notify":
                send({"jsonrpc": "2.0", "id": last_id, "result": {}})
            continue
        if not isinstance(message["id"], (str, int)) or isinstance(message["id"], bool):
            send({"jsonrpc": "2.0", "error": {"code": -32600, "message": "invalid id"}})
            continue
        last_id = message["id"]
        if method == "initialize" and MODE == "debug-leak" and os.environ.get("DEBUG"):
            write("debug: initialize from " + json.dumps(message["params"].get("clientInfo")) + "\n")
        result = result_for(method, message.get("params") or {})
        if method == "initialize" and MODE == "bad-schema":
            del result["serverInfo"]
        response = {"jsonrpc": "2.0", "id": last_id, "result": result}
        text = json.dumps(response, separators=(",", ":"))
        if method == "tools/list" and MODE == "two-frames":
            write('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}' + text + "\n")
        elif method == "tools/list" and MODE == "no-final-newline":
            write(text)
            sys.exit(1)
        else:
            write(text + "\n")
        if method == "ping" and MODE == "log-between":
            write("handled ping in 0.2 ms\n")
    if MODE == "lingers":
        while True:
            time.sleep(1)


main()
