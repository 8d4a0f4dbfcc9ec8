// Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with the npm
// test mock mock-nats-client (FrostDigital), which stands in for a NATS client in unit tests and
// delivers a published message to the subscriptions whose subject matches. `match` asks exactly
// that, through its public API: connect(), subscribe(pattern, callback), publish(subject),
// unsubscribe(sid).
// The protocol itself is answered by mock-client.js (adapters/shared/, copied in by the build).
"use strict";
const NATS = require("mock-nats-client");
const { version } = require("mock-nats-client/package.json");
const { serve } = require("./mock-client.js");

serve(NATS.connect(), `mock-nats-client ${version}`);
