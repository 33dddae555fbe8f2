// A scripted MCP host for etdi's end-to-end tests, written with the official
// TypeScript SDK. It connects to one server, runs a script of steps and
// prints what it received as one JSON object on stdout.
//
//   node host-client.mjs [--name CLIENTNAME] [--elicitation accept|decline|cancel|ignore|none] [--roots URI]
//        [--timeout-ms MS] [--stderr capture|inherit] [--url URL]
//        --script SCRIPT.json [-- COMMAND ARGS...]
//
// --name        clientInfo.name of initialize (default "test-host"; version "1.0.0")
// --elicitation declare the elicitation capability and answer every
//               elicitation/create with that action (accept fills every
//               requested boolean property with true and every other with
//               the string "yes"); ignore never answers; none (default)
//               declares no elicitation capability
// --roots       declare the roots capability and answer every roots/list
//               with the one root given (a file: URI)
// --timeout-ms  bound on the whole run (default 30000): when it passes, the
//               host closes the connection and prints what it has, with
//               "exit" naming the timeout
// --stderr      capture (default): the server's stderr goes into the
//               transcript's "stderr"; inherit: to this process's stderr
// --url         connect with the Streamable HTTP transport instead of
//               spawning COMMAND ARGS (which then are not given)
//
// COMMAND runs with this process's whole environment (the SDK would
// otherwise pass only a few variables such as HOME and PATH).
//
// SCRIPT.json is an array of steps, run in order:
//
//   {"op":"listTools"}   {"op":"listPrompts"}   {"op":"listResources"}
//   {"op":"listResourceTemplates"}
//        follow nextCursor through every page; "pages" holds each page's
//        result object as received
//   {"op":"call","name":"get_weather","arguments":{"city":"Berlin"}}
//   {"op":"getPrompt","name":"weather_report","arguments":{"city":"Berlin"}}
//   {"op":"readResource","uri":"weather://cities"}
//        "result" holds the result object, or "error" the JSON-RPC error
//        {code, message, data} as received
//   {"op":"callNoWait","name":...,"arguments":...}
//        starts a tools/call and goes on; its step gets "result" or "error"
//        once the answer arrives, and "pending": true if none came. At the
//        end of the script the host waits for such calls (within the
//        global timeout) before closing; the close step does not wait.
//   {"op":"waitFor","method":"notifications/tools/list_changed","timeoutMs":5000}
//        waits until a notification of that method has arrived since the
//        last waitFor of the same method (arrivals before the step count);
//        "error": {"timeout": true, ...} if none came in time
//   {"op":"sleep","ms":200}
//   {"op":"close"}
//        closes the connection at once (mid-call, say) and ends the script.
//        Over stdio the SDK closes the server's stdin, waits up to 2 s for it
//        to exit, then sends SIGTERM (and SIGKILL 2 s later): "result": {"ms"}
//        says how long closing took and "serverExit" how the server ended.
//
// The transcript printed on stdout:
//
//   {"initialize": {serverInfo, instructions, capabilities, protocolVersion},
//    "steps": [{"step": i, "op": ..., "seq": n, "result"|"error"|"pages": ...}],
//    "notifications": [{"seq": n, "method": ..., "params": ...}],
//    "elicitations": [{"seq": n, "id": ..., "params": ..., "action": ...}],
//    "transportErrors": [{"seq": n, "message": ...}],
//    "serverExit": {"code", "signal"} | null, "stderr": "...",
//    "exit": "ok" | "error: ..."}
//
// "elicitations" holds every elicitation/create request received, answered
// or not (action null: the host declared no elicitation capability and the
// SDK refused the request). "transportErrors" holds what the transport could
// not read (a line that is not JSON, say). "serverExit" is the exit status of
// COMMAND (stdio only; null while it runs), "stderr" its stderr (capture only).
//
// Every message from the server gets a sequence number (seq, from 1) when it
// arrives, before the SDK handles it; a step's seq is that of the answer that
// ended it (for sleep, waitFor and close: of the last message received when
// it ended), so seqs order steps and notifications as they were on the wire.
// All values are recorded as the transport parsed them from the wire: the
// requests use a schema that accepts anything and the SDK's typed helpers
// (which validate and may strip fields) are not used.
//
// A server that cannot be started, crashes or closes the connection still
// gives a transcript, with "exit" naming the error; the exit code is 0. It is
// 2 when the arguments or the script are unusable.
import { readFileSync } from "node:fs";
import { z } from "zod";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ElicitRequestSchema,
  ListRootsRequestSchema,
  ToolListChangedNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

// ---- arguments and script

function usage(message) {
  process.stderr.write(`host-client: ${message}\n` +
    "usage: node host-client.mjs [--name CLIENTNAME] [--elicitation accept|decline|cancel|ignore|none] [--roots URI] " +
    "[--timeout-ms MS] [--stderr capture|inherit] [--url URL] --script SCRIPT.json [-- COMMAND ARGS...]\n");
  process.exit(2);
}

const opts = { name: "test-host", elicitation: "none", timeoutMs: 30000, stderr: "capture", url: "", script: "", command: [] };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--") {
      opts.command = argv.slice(i + 1);
      break;
    }
    const value = argv[++i];
    if (value === undefined) usage(`${flag} wants a value`);
    switch (flag) {
      case "--name": opts.name = value; break;
      case "--elicitation": opts.elicitation = value; break;
      case "--roots": opts.roots = value; break;
      case "--timeout-ms": opts.timeoutMs = Number(value); break;
      case "--stderr": opts.stderr = value; break;
      case "--url": opts.url = value; break;
      case "--script": opts.script = value; break;
      default: usage(`unknown flag ${flag}`);
    }
  }
  if (!["accept", "decline", "cancel", "ignore", "none"].includes(opts.elicitation)) usage(`--elicitation ${opts.elicitation}`);
  if (!["capture", "inherit"].includes(opts.stderr)) usage(`--stderr ${opts.stderr}`);
  if (!(opts.timeoutMs > 0)) usage("--timeout-ms wants a positive number");
  if (!opts.script) usage("--script is required");
  if (!opts.url === !opts.command.length) usage("give either --url or -- COMMAND ARGS");
}

const stepOps = ["listTools", "listPrompts", "listResources", "listResourceTemplates", "call", "callNoWait",
  "getPrompt", "readResource", "waitFor", "sleep", "close"];
let script;
try {
  script = JSON.parse(readFileSync(opts.script, "utf8"));
  if (!Array.isArray(script)) throw new Error("not an array of steps");
  script.forEach((s, i) => {
    if (!s || !stepOps.includes(s.op)) throw new Error(`step ${i}: unknown op ${JSON.stringify(s?.op)}`);
  });
} catch (err) {
  process.stderr.write(`host-client: script ${opts.script}: ${err.message}\n`);
  process.exit(2);
}

// ---- the transcript

const transcript = {
  initialize: null,
  steps: [],
  notifications: [],
  elicitations: [],
  transportErrors: [],
};
let stderrText = "";
const stderrLimit = 1 << 20;

// seq numbers every message received; rawAnswers maps a request id to the
// answer (result or error) exactly as received.
let seq = 0;
const rawAnswers = new Map();
// lastRequestId is the id of the request sent last: the SDK sends a request
// synchronously inside client.request, so it is the id of the request that
// client.request just started.
let lastRequestId;
let initializeId;

// Notifications counted by method, for waitFor.
const received = new Map(); // method -> count
const consumed = new Map(); // method -> count seen by a waitFor
const lastSeqOf = new Map(); // method -> seq of the last one
let wakeWaiters = () => {};

// ---- connection

const client = new Client(
  { name: opts.name, version: "1.0.0" },
  { capabilities: { ...(opts.elicitation === "none" ? {} : { elicitation: {} }), ...(opts.roots ? { roots: {} } : {}) } },
);
if (opts.roots) client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: opts.roots }] }));

let transport;
if (opts.url) {
  transport = new StreamableHTTPClientTransport(new URL(opts.url));
} else {
  transport = new StdioClientTransport({
    command: opts.command[0],
    args: opts.command.slice(1),
    env: process.env,
    stderr: opts.stderr === "capture" ? "pipe" : "inherit",
  });
  if (opts.stderr === "capture") {
    transport.stderr.on("data", (chunk) => {
      if (stderrText.length < stderrLimit) stderrText += chunk.toString("utf8");
    });
  }
}

// The tap: Client.connect chains the transport's own onmessage, onclose and
// onerror before its handlers, so these see every message first, as parsed
// from the wire.
transport.onmessage = (message) => {
  seq++;
  if (message.id !== undefined && message.method === undefined) {
    rawAnswers.set(message.id, { seq, message });
    if (message.id === initializeId && message.result) {
      const { serverInfo, instructions, capabilities, protocolVersion } = message.result;
      transcript.initialize = { serverInfo, instructions, capabilities, protocolVersion };
    }
  } else if (message.id !== undefined) {
    // A request from the server.
    if (message.method === "elicitation/create") {
      transcript.elicitations.push({ seq, id: message.id, params: message.params, action: null });
    }
  } else if (message.method !== undefined) {
    transcript.notifications.push({ seq, method: message.method, params: message.params });
    received.set(message.method, (received.get(message.method) || 0) + 1);
    lastSeqOf.set(message.method, seq);
  }
};
let closing = false; // the host closes the connection itself
let closedError = ""; // why the connection ended, when the host did not end it
transport.onclose = () => {
  if (!closing && !closedError) closedError = "connection closed by the server";
  wakeWaiters();
};
transport.onerror = (err) => {
  transcript.transportErrors.push({ seq, message: String(err?.message ?? err) });
};
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method !== undefined && message.id !== undefined) {
    lastRequestId = message.id;
    if (message.method === "initialize") initializeId = message.id;
  }
  return send(message, options);
};
// The server's exit status (stdio). The SDK keeps the child process in a
// private field; it is there once start has spawned it.
let serverExit = null;
if (!opts.url) {
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    transport._process?.once("exit", (code, signal) => { serverExit = { code, signal }; });
  };
}

// Notification handlers, as a host registers them. The recording is done by
// the tap above, which also sees notifications no handler is registered for;
// the handlers wake the steps waiting for a notification.
for (const schema of [ToolListChangedNotificationSchema, PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema, LoggingMessageNotificationSchema]) {
  client.setNotificationHandler(schema, () => wakeWaiters());
}
client.fallbackNotificationHandler = async () => wakeWaiters();

if (opts.elicitation !== "none") {
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const record = transcript.elicitations.find((e) => e.id === extra.requestId && e.action === null);
    if (record) record.action = opts.elicitation;
    if (opts.elicitation === "ignore") return new Promise(() => {});
    if (opts.elicitation !== "accept") return { action: opts.elicitation };
    const content = {};
    for (const [property, schema] of Object.entries(request.params.requestedSchema?.properties ?? {})) {
      content[property] = schema?.type === "boolean" ? true : "yes";
    }
    return { action: "accept", content };
  });
}

// ---- steps

// anything accepts every result: the SDK then hands it over unchanged.
const anything = z.any();
const requestTimeout = opts.timeoutMs;

// errorOf describes a failed request: the JSON-RPC error as received when
// the server (or whatever sits in between) answered with one, else the local
// failure (connection closed, timeout) with "local": true.
function errorOf(err, id) {
  const answer = rawAnswers.get(id);
  if (answer?.message.error) return answer.message.error;
  const out = { local: true, message: String(err?.message ?? err) };
  if (err?.code !== undefined) out.code = err.code;
  if (err?.data !== undefined) out.data = err.data;
  return out;
}

// request sends one request and returns {id, promise}.
function request(method, params) {
  const promise = client.request(params === undefined ? { method } : { method, params }, anything, { timeout: requestTimeout });
  return { id: lastRequestId, promise };
}

// answer completes record with the outcome of one request.
async function answer(record, method, params) {
  const { id, promise } = request(method, params);
  try {
    record.result = await promise;
  } catch (err) {
    record.error = errorOf(err, id);
  }
  record.seq = rawAnswers.get(id)?.seq ?? seq;
}

async function listAll(record, method) {
  record.pages = [];
  let cursor;
  for (let n = 0; n < 1000; n++) {
    const { id, promise } = request(method, cursor === undefined ? undefined : { cursor });
    try {
      const result = await promise;
      record.pages.push(result);
      record.seq = rawAnswers.get(id)?.seq ?? seq;
      cursor = result?.nextCursor;
      if (cursor === undefined) return;
    } catch (err) {
      record.error = errorOf(err, id);
      record.seq = rawAnswers.get(id)?.seq ?? seq;
      return;
    }
  }
  record.error = { local: true, message: "more than 1000 pages" };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// waitFor resolves once a notification of method has arrived since the last
// waitFor of it, or the connection ended, or timeoutMs passed.
async function waitFor(record, method, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while ((received.get(method) || 0) <= (consumed.get(method) || 0)) {
    const left = deadline - Date.now();
    if (left <= 0 || closedError || closing) {
      record.error = { timeout: true, message: `no ${method} within ${timeoutMs} ms` };
      record.seq = seq;
      return;
    }
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, left);
      wakeWaiters = () => { clearTimeout(timer); resolve(); };
    });
  }
  record.result = { count: received.get(method) - (consumed.get(method) || 0), seq: lastSeqOf.get(method) };
  consumed.set(method, received.get(method));
  record.seq = seq;
}

const pendingCalls = [];

async function runStep(i, s) {
  const record = { step: i, op: s.op, at: Date.now() };
  transcript.steps.push(record);
  switch (s.op) {
    case "listTools": return listAll(record, "tools/list");
    case "listPrompts": return listAll(record, "prompts/list");
    case "listResources": return listAll(record, "resources/list");
    case "listResourceTemplates": return listAll(record, "resources/templates/list");
    case "call":
      record.name = s.name;
      return answer(record, "tools/call", { name: s.name, arguments: s.arguments ?? {} });
    case "callNoWait":
      record.name = s.name;
      record.pending = true;
      pendingCalls.push(answer(record, "tools/call", { name: s.name, arguments: s.arguments ?? {} })
        .finally(() => { delete record.pending; }));
      return;
    case "getPrompt":
      record.name = s.name;
      return answer(record, "prompts/get", { name: s.name, arguments: s.arguments ?? {} });
    case "readResource":
      record.uri = s.uri;
      return answer(record, "resources/read", { uri: s.uri });
    case "waitFor":
      record.method = s.method;
      return waitFor(record, s.method, s.timeoutMs ?? 5000);
    case "sleep":
      record.ms = s.ms;
      await sleep(s.ms);
      record.seq = seq;
      return;
    case "close": {
      const started = Date.now();
      closing = true;
      await client.close();
      record.result = { ms: Date.now() - started };
      record.seq = seq;
      return;
    }
  }
}

// ---- run

let finished = false;
// finish closes the connection (bounded), prints the transcript and exits.
async function finish(exit) {
  if (finished) return;
  finished = true;
  closing = true;
  await Promise.race([client.close().catch(() => {}), sleep(5000)]);
  transcript.serverExit = serverExit;
  if (!opts.url && opts.stderr === "capture") transcript.stderr = stderrText;
  transcript.exit = exit;
  process.stdout.write(JSON.stringify(transcript) + "\n", () => process.exit(0));
}

const globalTimer = setTimeout(() => finish(`error: no end within the global timeout of ${opts.timeoutMs} ms`), opts.timeoutMs);

async function main() {
  try {
    await client.connect(transport, { timeout: requestTimeout });
  } catch (err) {
    return finish(`error: connect: ${closedError ? closedReason() : err?.message ?? err}`);
  }
  for (let i = 0; i < script.length; i++) {
    if (closedError) break;
    await runStep(i, script[i]);
    if (script[i].op === "close") break;
  }
  if (!closing) await Promise.allSettled(pendingCalls);
  clearTimeout(globalTimer);
  return finish(closedError && !closing ? `error: ${closedReason()}` : "ok");
}

// closedReason says why the connection ended without the host closing it.
function closedReason() {
  if (!serverExit) return closedError;
  return `${closedError} (server exited with ${serverExit.signal ? `signal ${serverExit.signal}` : `code ${serverExit.code}`})`;
}

main().catch((err) => finish(`error: ${err?.stack ?? err}`));
