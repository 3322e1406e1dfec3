// tavli.v1 from Node.js: list the plays of a roll, apply one, evaluate.
//
//   node example.js [--addr localhost:50051] [--ca ca.pem [--cert c.pem --key c.key]]
//                   [--service-config file.json]
//
// The service definition is loaded from proto/tavli/v1/engine.proto at run time
// (@grpc/proto-loader; --proto or $TAVLI_PROTO to use another copy). With --ca the
// channel is TLS; with --cert and --key as well, mutual TLS. Requests are sent
// gzip-compressed. The channel uses the project's gRPC service config,
// deploy/grpc-service-config.json (--service-config or $TAVLI_SERVICE_CONFIG for
// another file, --service-config "" for none): round_robin over every address of
// the target, e.g. dns:///tavli-engine-headless.<namespace>.svc.cluster.local:50051,
// and retries on UNAVAILABLE and RESOURCE_EXHAUSTED (grpc-js 1.14 ignores its
// healthCheckConfig: it leaves a pod on its GOAWAY or a failed connection).
// clients/python prints the same lines; clients/ci.sh runs both against a real
// server and compares them.

"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { parseArgs } = require("node:util");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const PORTES_START = "portes/w/24:2,13:5,8:3,6:5/1:2,12:5,17:3,19:5";
const BEAR_OFF = "portes/w/6:1,off:14/19:1,off:14";

const { values: args } = parseArgs({
  options: {
    addr: { type: "string", default: "localhost:50051" },
    ca: { type: "string" },
    cert: { type: "string" },
    key: { type: "string" },
    "server-name": { type: "string" },
    proto: { type: "string", default: process.env.TAVLI_PROTO || path.join(__dirname, "../../proto") },
    "service-config": {
      type: "string",
      default: process.env.TAVLI_SERVICE_CONFIG ?? path.join(__dirname, "../../deploy/grpc-service-config.json"),
    },
  },
});
if (Boolean(args.cert) !== Boolean(args.key)) {
  console.error("--cert and --key go together");
  process.exit(2);
}

const definition = protoLoader.loadSync("tavli/v1/engine.proto", {
  includeDirs: [args.proto],
  keepCase: false, // fields in lowerCamelCase: positionId, sideToMove
  enums: String, // enum values by name: "SIDE_WHITE"
  defaults: true,
  oneofs: true,
});
const tavli = grpc.loadPackageDefinition(definition).tavli.v1;

function credentials() {
  if (!args.ca) return grpc.credentials.createInsecure();
  const read = (f) => fs.readFileSync(f);
  return args.cert
    ? grpc.credentials.createSsl(read(args.ca), read(args.key), read(args.cert))
    : grpc.credentials.createSsl(read(args.ca));
}

const options = { "grpc.default_compression_algorithm": 2 /* gzip */ };
// grpc-js checks the JSON and throws on a malformed config when the client is made.
if (args["service-config"]) options["grpc.service_config"] = fs.readFileSync(args["service-config"], "utf8");
if (args["server-name"]) options["grpc.ssl_target_name_override"] = args["server-name"];
const client = new tavli.TavliEngine(args.addr, credentials(), options);

/** One unary call as a promise, with a deadline. */
function call(method, request, seconds = 10) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + seconds * 1000 }, (err, response) =>
      err ? reject(err) : resolve(response),
    );
  });
}

const signed = (x) => (x >= 0 ? "+" : "") + x.toFixed(3);

async function main() {
  const dice = { die1: 3, die2: 1 };
  const plays = await call("ListLegalPlays", { positionId: PORTES_START, dice });
  console.log(`ListLegalPlays ${PORTES_START} 3-1: ${plays.plays.length} plays`);
  for (const p of plays.plays) console.log(`  ${p.notation.padEnd(12)} ${p.position.positionId}`);

  const applied = await call("ApplyPlay", { positionId: PORTES_START, dice, notation: "8/5 6/5" });
  console.log(`ApplyPlay 8/5 6/5: ${applied.position.positionId}, ${applied.position.sideToMove} to move`);

  const after = applied.position.positionId;
  const ev = await call("Evaluate", { positionId: after, dice: { die1: 6, die2: 5 }, plies: 0 }, 30);
  if (!(ev.equity >= -2 && ev.equity <= 2)) throw new Error(`equity ${ev.equity}`);
  const best = ev.rankedPlays[0];
  console.log(
    `Evaluate 6-5, 0 plies: ${ev.evaluator}, equity ${signed(ev.equity)}, ` +
      `${ev.rankedPlays.length} plays ranked, best ${best.play.notation} (${signed(best.equity)})`,
  );

  const exact = await call("Evaluate", { positionId: BEAR_OFF });
  console.log(
    `Evaluate ${BEAR_OFF}: ${exact.evaluator}, win ${exact.probabilities.win.toFixed(4)}, equity ${signed(exact.equity)}`,
  );

  try {
    await call("ListLegalPlays", { positionId: PORTES_START, dice: { die1: 7, die2: 1 } });
    console.log("ListLegalPlays 7-1: answered (unexpected)");
    process.exitCode = 1;
  } catch (e) {
    const name = Object.keys(grpc.status).find((k) => grpc.status[k] === e.code);
    console.log(`ListLegalPlays 7-1: ${name}: ${e.details}`);
  }
}

main()
  .catch((e) => {
    console.error(e);
    process.exitCode = 1;
  })
  .finally(() => client.close());
