// Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with the npm
// test mock @sensorfactdev/mock-node-nats, which stands in for a NATS client in unit tests and
// delivers a published message to the subscriptions whose subject matches. `match` asks exactly
// that, through its public API: subscribe(pattern, callback), publish(subject), unsubscribe(sid).
// The protocol itself is answered by mock-client.js (adapters/shared/, copied in by the build).
"use strict";
const NATS = require("@sensorfactdev/mock-node-nats");
const { version } = require("@sensorfactdev/mock-node-nats/package.json");
const { serve } = require("./mock-client.js");

serve(NATS.connect(), `@sensorfactdev/mock-node-nats ${version}`);
