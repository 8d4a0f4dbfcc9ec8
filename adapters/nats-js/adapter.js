// Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with nats.js v3.
// @nats-io/nats-core checks a subject only on a connection: NatsConnection.publish and .subscribe
// throw InvalidSubjectError, before anything is sent, for a subject they refuse. So the shim connects
// (@nats-io/transport-node's connect) to the server at $NATS_URL, which the harness starts for it
// (`server` in adapter.toml), and a subject is valid when the call does not throw.
"use strict";
const readline = require("readline");
const { connect } = require("@nats-io/transport-node");
// Its package.json is not among the package's exports: read from the folder `npm ci` filled.
const { version } = require(`${__dirname}/node_modules/@nats-io/nats-core/package.json`);

const PUBLISH = "NatsConnection.publish";
const SUBSCRIBE = "NatsConnection.subscribe";
// Each rule and the call that answers it: the lenient rules ask the same calls as the strict ones.
const ANSWERED_BY = {
  subscribe: SUBSCRIBE, publish: PUBLISH, "subscribe-lenient": SUBSCRIBE, "publish-lenient": PUBLISH,
};
let connection = null;

function connected() {
  if (!process.env.NATS_URL) return Promise.reject(new Error("no server: $NATS_URL is not set"));
  connection = connection || connect({ servers: process.env.NATS_URL, maxReconnectAttempts: -1 });
  return connection;
}

// Whether the connection takes `subject`: a subscription is ended at once, a message is sent empty.
function takes(nc, subject, literal) {
  try {
    if (literal) nc.publish(subject);
    else nc.subscribe(subject).unsubscribe();
    return true;
  } catch (error) {
    if (error.name === "InvalidSubjectError") return false;
    throw error;
  }
}

async function answer(request) {
  const id = request.id === undefined ? null : request.id;
  if (request.op === "hello") {
    return {
      id, protocol: 2, implementation: `@nats-io/nats-core ${version}`, server_version: null,
      ops: ["hello", "valid_subject"], subject_rules: Object.keys(ANSWERED_BY), answered_by: ANSWERED_BY,
    };
  }
  if (request.op !== "valid_subject") {
    return { id, error: "bad-request", detail: `unknown op ${JSON.stringify(request.op)}` };
  }
  if (typeof request.subject !== "string") {
    return { id, error: "bad-request", detail: "field 'subject' must be a string" };
  }
  try {
    return { id, valid: takes(await connected(), request.subject, request.literal === true) };
  } catch (error) {
    return { id, error: "internal-error", detail: String(error).split("\n")[0] };
  }
}

async function reply(text) {
  let request = null;
  try {
    request = JSON.parse(text);
  } catch (error) {
    // not JSON: answered below as a request that is no object
  }
  const isObject = request !== null && typeof request === "object" && !Array.isArray(request);
  const value = isObject ? await answer(request) : { id: null, error: "bad-request", detail: "not a JSON object" };
  // ASCII only, as the protocol says: every other UTF-16 unit becomes a \uXXXX escape.
  const ascii = JSON.stringify(value).replace(/[^\x00-\x7f]/g, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  process.stdout.write(ascii + "\n");
}

// Answers in request order: each line waits for the one before it (the first waits for the connection).
let pending = Promise.resolve();
readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
  .on("line", (text) => { if (text.trim()) pending = pending.then(() => reply(text)); })
  .on("close", () => pending.then(() => (connection ? connection.then((nc) => nc.close(), () => {}) : null)));
