#!/usr/bin/env bash
# toolmux as the client under test of the official MCP conformance suite
# (`@modelcontextprotocol/conformance client --command conformance-client.sh --scenario S`).
#
# The suite starts a test server for the scenario, then runs this script with the server's URL
# as the last argument and the scenario's name in MCP_CONFORMANCE_SCENARIO. The script drives
# the real `toolmux` binary (TOOLMUX_BIN) as a user would, in a throwaway project with an
# isolated home: `toolmux mcp add conf --url URL` (connects, initializes and discovers the
# tools), then whatever the scenario asks of a client. Exit status 0 means every step worked;
# whether the client behaved correctly on the wire is judged by the suite's own checks.
set -euo pipefail

url="${!#}"
scenario="${MCP_CONFORMANCE_SCENARIO:?the conformance suite sets MCP_CONFORMANCE_SCENARIO}"
toolmux="${TOOLMUX_BIN:?set TOOLMUX_BIN to the toolmux binary under test}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project" "$work/home"
cd "$work/project"
export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config"
unset TOOLMUX_PROJECT TOOLMUX_LOG

run() {
    echo "+ toolmux $*" >&2
    "$toolmux" "$@"
}

run mcp add conf --url "$url"

case "$scenario" in
initialize)
    # The handshake (and tools/list) happened in `mcp add`; the server must show as discovered.
    run mcp list
    ;;
tools_call)
    run tools call conf__add_numbers -a a=5 -a b=3
    ;;
sse-retry)
    # The server closes the call's event stream after a priming event; the client must resume
    # it with a GET carrying Last-Event-ID after the advertised `retry:` delay.
    run tools call conf__test_reconnection
    ;;
*)
    echo "conformance-client.sh: no client steps for scenario '$scenario'" >&2
    exit 2
    ;;
esac
