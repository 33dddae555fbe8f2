#!/bin/sh
exec /tmp/rc-etdi run --trust /work/main/trust.json --pins /work/main/pins.db --name everything -- /work/h23-realclients/testdata/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js
