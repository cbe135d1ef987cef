#!/usr/bin/env python3
"""Writes benign.jsonl to stdout: the tool and parameter descriptions of the real MCP servers the
tests install, taken from their code (never written by hand), one JSON line each with the file
it came from. Run from the repository root with the peers installed:

    python3 crates/toolmux-trust/corpus/extract_benign.py > crates/toolmux-trust/corpus/benign.jsonl

Sources: @modelcontextprotocol/server-everything (its tools), -filesystem, -memory and the
conformance package (the MCP schema's descriptions it bundles) under
$TOOLMUX_PEERS/upstream/node_modules, and mcp_server_git and mcp_server_time in the test venv.
"""
import ast
import glob
import json
import os
import re
import sys

PEERS = os.environ.get("TOOLMUX_PEERS", "tests/peers")
NODE = os.path.join(PEERS, "upstream/node_modules/@modelcontextprotocol/")
PYTHON = os.environ.get("TOOLMUX_TEST_PYTHON", "/root/.cache/toolmux/venv/bin/python")

out, seen = [], set()


def add(source, text):
    text = text.strip()
    if len(text) < 12 or text in seen:
        return
    seen.add(text)
    out.append({"source": source, "description": text})


# A JS string literal (double, single or template quotes), after `description:` or in
# `.describe(...)`, possibly joined with `+`.
LITERAL = r'("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`(?:[^`\\$]|\\.)*`)'
DESCRIBED = re.compile(
    r"(?:description\s*:\s*|\.describe\(\s*)" + LITERAL + r"((?:\s*\+\s*" + LITERAL + r")*)"
)


def unquote(literal):
    if literal[0] == '"':
        return json.loads(literal)
    return literal[1:-1].replace("\\n", "\n").replace("\\" + literal[0], literal[0])


files = sorted(glob.glob(NODE + "server-everything/dist/tools/*.js")) + [
    NODE + "server-filesystem/dist/index.js",
    NODE + "server-memory/dist/index.js",
    NODE + "conformance/dist/index.js",
]
for path in files:
    source = "@modelcontextprotocol/" + path[len(NODE):]
    code = open(path, encoding="utf-8").read()
    for m in DESCRIBED.finditer(code):
        parts = [m.group(1)] + re.findall(LITERAL, m.group(2) or "")
        add(source, "".join(unquote(p) for p in parts))

site = glob.glob(os.path.join(os.path.dirname(os.path.dirname(PYTHON)), "lib/python*/site-packages/"))[0]
for path in sorted(glob.glob(site + "mcp_server_git/*.py") + glob.glob(site + "mcp_server_time/*.py")):
    source = path[len(site):]
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
        if (
            isinstance(node, ast.keyword)
            and node.arg == "description"
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            add(source, node.value.value)

print(len(out), "descriptions", file=sys.stderr)
for entry in out:
    print(json.dumps(entry, ensure_ascii=False))
