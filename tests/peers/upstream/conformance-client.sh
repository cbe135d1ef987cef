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

# The auth scenarios hand the client what it would have been given out of band, as JSON in
# MCP_CONFORMANCE_CONTEXT: a pre-registered client's id and secret. The secret stays a `${VAR}`
# reference in the config file.
context() {
    node -e 'const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}"); process.stdout.write(String(c[process.argv[1]] ?? ""))' "$1"
}
add=(mcp add conf --url "$url")
case "$scenario" in
auth/*)
    # The suite's authorization servers accept this Client ID Metadata Document URL when they
    # advertise support for such documents (auth/basic-cimd); the others ignore it.
    add+=(--client-metadata-url https://conformance-test.local/client-metadata.json)
    client_id="$(context client_id)"
    export CONF_CLIENT_SECRET="$(context client_secret)"
    if [[ -n "$client_id" ]]; then
        add+=(--client-id "$client_id")
        if [[ -n "$CONF_CLIENT_SECRET" ]]; then
            add+=(--client-secret '${CONF_CLIENT_SECRET}')
        fi
    fi
    if [[ "$scenario" == auth/client-credentials-* ]]; then
        add+=(--client-credentials)
    fi
    # The browser: follows the authorization URL and its redirects back to toolmux.
    export TOOLMUX_BROWSER="node $(dirname "$(realpath "${BASH_SOURCE[0]}")")/follow-sign-in.mjs"
    ;;
esac
# A server that asks for sign-in is added all the same, reading `needs-sign-in`.
run "${add[@]}"

case "$scenario" in
initialize | request-metadata | json-schema-ref-no-deref)
    # The handshake or `server/discover` (and tools/list) happened in `mcp add`; the server must
    # show as discovered. request-metadata refuses the first request's protocol version once;
    # json-schema-ref-no-deref lists a tool whose schema names a network `$ref`, never fetched.
    run mcp list
    ;;
http-standard-headers)
    run tools call conf__test_headers
    run tools call conf__my-hyphenated-tool
    ;;
http-custom-headers)
    # The calls, with arguments whose `x-mcp-header` parameters become Mcp-Param-* headers, are
    # the scenario's context. An argument given as `null` is left out: toolmux checks arguments
    # against the tool's schema, where null is no boolean, and the scenario checks that a null
    # or absent argument sends no header.
    for i in 0 1; do
        name="$(node -e 'const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT); process.stdout.write(c.toolCalls[process.argv[1]].name)' "$i")"
        args="$(node -e 'const c = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT); process.stdout.write(JSON.stringify(c.toolCalls[process.argv[1]].arguments, (k, v) => v === null ? undefined : v))' "$i")"
        run tools call "conf__$name" --args "$args"
    done
    ;;
http-invalid-tool-headers)
    # The tools with invalid `x-mcp-header` annotations are left out at discovery; the valid one
    # is called.
    run tools call conf__valid_tool -a region=us-west1
    if run tools call conf__invalid_empty_header -a value=x; then
        echo "conformance-client.sh: a tool with an invalid x-mcp-header was offered" >&2
        exit 1
    fi
    ;;
tools_call)
    run tools call conf__add_numbers -a a=5 -a b=3
    ;;
sse-retry)
    # The server closes the call's event stream after a priming event; the client must resume
    # it with a GET carrying Last-Event-ID after the advertised `retry:` delay.
    run tools call conf__test_reconnection
    ;;
auth/*)
    run mcp list
    run mcp login conf --wait 30
    # A 403 `insufficient_scope` (auth/scope-step-up) leaves the server needing sign-in with
    # the scopes the server named; one more sign-in asks for them. Bounded: one step-up.
    if ! run tools call conf__test-tool; then
        run mcp list
        run mcp login conf --wait 30
        run tools call conf__test-tool
    fi
    ;;
elicitation-sep1034-client-defaults | sep-2322-client-request-state)
    # A real MCP client (the Python SDK's, tests/peers/mcp/client.py) on `toolmux serve` answers
    # the forms toolmux relays to it. elicitation-sep1034-client-defaults: it accepts the form
    # with no content, and toolmux puts the schema's defaults in on the way back to the server.
    # sep-2322-client-request-state: the server (2026-07-28) answers two calls with "input
    # required"; toolmux asks the client the form each names and calls again with the answer
    # and the server's request state, then makes a call in between and one whose result has no
    # resultType.
    if [[ "$scenario" == sep-2322-* ]]; then
        elicitation='[{"confirmed": true}, {"confirmed": true}]'
        steps='[{"op": "call", "name": "conf__test_mrtr_echo_state", "arguments": {}}, {"op": "call", "name": "conf__test_mrtr_unrelated", "arguments": {}}, {"op": "call", "name": "conf__test_mrtr_no_state", "arguments": {}}, {"op": "call", "name": "conf__test_mrtr_no_result_type", "arguments": {}}]'
    else
        elicitation='[{}]'
        steps='[{"op": "call", "name": "conf__test_client_elicitation_defaults", "arguments": {}}]'
    fi
    "$toolmux" serve --port 0 2>"$work/serve.log" &
    serve_pid=$!
    trap 'kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null; rm -rf "$work"' EXIT
    for _ in $(seq 300); do
        grep -q '^toolmux web app: ' "$work/serve.log" && break
        sleep 0.1
    done
    mcp_url="$(sed -n 's/^toolmux: serving MCP at //p' "$work/serve.log")"
    token="$(cat .toolmux/state/local-token)"
    plan="$(printf '{"transport": "http", "url": "%s", "headers": {"Authorization": "Bearer %s"}, "elicitation": %s, "steps": %s}' "$mcp_url" "$token" "$elicitation" "$steps")"
    "${TOOLMUX_TEST_PYTHON:-python3}" "$(dirname "$(realpath "${BASH_SOURCE[0]}")")/../mcp/client.py" "$plan"
    ;;
*)
    echo "conformance-client.sh: no client steps for scenario '$scenario'" >&2
    exit 2
    ;;
esac
