// gRPC-Web unary calls and the protobuf wire format, for the few messages of
// tavli.v1 that the page sends and reads (proto/tavli/v1/engine.proto). Hand-written
// so that the page needs no build step: field numbers are those of the .proto.
//
// Wire format: https://protobuf.dev/programming-guides/encoding/ (varint, fixed32,
// length-delimited). gRPC-Web: https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-WEB.md
// (frames: 1 flag byte, 4-byte big-endian length; flag 0x80 marks the trailers).

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Builds one protobuf message; fields at their default value are left out. */
export class Writer {
  constructor() {
    this.bytes = [];
  }

  varint(value) {
    let v = Number(value);
    while (v > 127) {
      this.bytes.push((v % 128) | 128);
      v = Math.floor(v / 128);
    }
    this.bytes.push(v);
    return this;
  }

  tag(field, wireType) {
    return this.varint(field * 8 + wireType);
  }

  /** A uint32 or enum field. */
  uint(field, value) {
    if (value) this.tag(field, 0).varint(value);
    return this;
  }

  /** A string field. */
  string(field, text) {
    if (text) this.bytes_(field, encoder.encode(text));
    return this;
  }

  /** An embedded message field (always written, even when empty). */
  message(field, writer) {
    return this.bytes_(field, writer.bytes);
  }

  bytes_(field, bytes) {
    this.tag(field, 2).varint(bytes.length);
    for (const b of bytes) this.bytes.push(b);
    return this;
  }

  finish() {
    return Uint8Array.from(this.bytes);
  }
}

/** A decoded protobuf message: its fields by number, read with the accessors. */
export class Message {
  constructor(bytes) {
    this.fields = new Map();
    let i = 0;
    const varint = () => {
      let value = 0;
      let scale = 1;
      for (;;) {
        if (i >= bytes.length) throw new Error("protobuf: truncated varint");
        const b = bytes[i++];
        value += (b & 127) * scale;
        scale *= 128;
        if (b < 128) return value;
      }
    };
    const take = (n) => {
      if (i + n > bytes.length) throw new Error("protobuf: truncated field");
      const v = bytes.subarray(i, i + n);
      i += n;
      return v;
    };
    while (i < bytes.length) {
      const key = varint();
      const field = Math.floor(key / 8);
      const wireType = key % 8;
      let value;
      if (wireType === 0) value = varint();
      else if (wireType === 1) value = take(8);
      else if (wireType === 2) value = take(varint());
      else if (wireType === 5) value = take(4);
      else throw new Error(`protobuf: wire type ${wireType}`);
      if (!this.fields.has(field)) this.fields.set(field, []);
      this.fields.get(field).push(value);
    }
  }

  last(field) {
    const values = this.fields.get(field);
    return values ? values[values.length - 1] : undefined;
  }

  /** A uint32, enum or bool field (0 when absent). */
  uint(field) {
    return this.last(field) ?? 0;
  }

  /** A float field (0 when absent). */
  float(field) {
    const b = this.last(field);
    if (!b) return 0;
    return new DataView(b.buffer, b.byteOffset, 4).getFloat32(0, true);
  }

  /** A string field ("" when absent). */
  string(field) {
    const b = this.last(field);
    return b ? decoder.decode(b) : "";
  }

  /** An embedded message field (null when absent). */
  message(field) {
    const b = this.last(field);
    return b ? new Message(b) : null;
  }

  /** A repeated message field. */
  messages(field) {
    return (this.fields.get(field) || []).map((b) => new Message(b));
  }
}

/** A gRPC error: the status code (3 = INVALID_ARGUMENT, ...) and its message. */
export class GrpcError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function percentDecoded(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/**
 * Calls `tavli.v1.TavliEngine/<method>` over gRPC-Web on the page's own origin with
 * the request `writer`, and returns the response as a Message; throws GrpcError for
 * a status other than OK.
 */
export async function call(method, writer) {
  const message = writer.finish();
  const body = new Uint8Array(5 + message.length);
  new DataView(body.buffer).setUint32(1, message.length);
  body.set(message, 5);
  const response = await fetch(`/tavli.v1.TavliEngine/${method}`, {
    method: "POST",
    headers: {
      "content-type": "application/grpc-web+proto",
      "x-grpc-web": "1",
      "grpc-timeout": "20S",
    },
    body,
  });
  if (!response.ok) throw new GrpcError(14, `HTTP ${response.status}`);
  // A trailers-only answer (most errors) carries the status in the headers.
  let status = response.headers.get("grpc-status");
  let statusMessage = response.headers.get("grpc-message") || "";
  let payload = null;
  const data = new Uint8Array(await response.arrayBuffer());
  let i = 0;
  while (i + 5 <= data.length) {
    const flag = data[i];
    const length = new DataView(data.buffer, data.byteOffset + i + 1, 4).getUint32(0);
    const frame = data.subarray(i + 5, i + 5 + length);
    i += 5 + length;
    if (flag & 0x80) {
      for (const line of decoder.decode(frame).split("\r\n")) {
        const colon = line.indexOf(":");
        if (colon < 0) continue;
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        if (name === "grpc-status") status = value;
        if (name === "grpc-message") statusMessage = value;
      }
    } else {
      payload = frame;
    }
  }
  if (status === null) throw new GrpcError(2, "no grpc-status in the answer");
  if (status !== "0") throw new GrpcError(Number(status), percentDecoded(statusMessage));
  return new Message(payload || new Uint8Array());
}

// ---------------------------------------------------------------- tavli.v1 messages

export const SIDE_WHITE = 1;
export const SIDE_BLACK = 2;
export const VARIANTS = { 1: "Portes", 2: "Plakoto", 3: "Fevga" };

/** tavli.v1.Position as a plain object. */
export function position(m) {
  if (!m) return null;
  return {
    variant: m.uint(1),
    sideToMove: m.uint(2),
    points: m.messages(3).map((p) => ({ white: p.uint(1), black: p.uint(2), pinned: p.uint(3) })),
    barWhite: m.uint(4),
    barBlack: m.uint(5),
    offWhite: m.uint(6),
    offBlack: m.uint(7),
    positionId: m.string(8),
    gnubgId: m.string(9),
  };
}

/** tavli.v1.Probabilities as a plain object. */
export function probabilities(m) {
  return m
    ? { win: m.float(1), winMars: m.float(2), lose: m.float(3), loseMars: m.float(4), draw: m.float(5) }
    : null;
}

/** tavli.v1.GameOutcome as a plain object, or null. */
export function outcome(m) {
  return m ? { winner: m.uint(1), points: m.uint(2), reason: m.uint(3) } : null;
}

/**
 * The position `oneof` (fields 2 and 3 of ListLegalPlaysRequest, ApplyPlayRequest
 * and EvaluateRequest): a Position ID (it always has ':'), or a GNU Backgammon ID
 * with the side on roll.
 */
export function writePosition(w, text, side) {
  if (text.includes(":")) return w.string(2, text);
  return w.message(3, new Writer().string(1, text).uint(2, side));
}

/** tavli.v1.Dice. */
export function dice(die1, die2) {
  return new Writer().uint(1, die1).uint(2, die2);
}

/** Evaluate: the position, optional dice (ranks the plays), plies. */
export async function evaluate(positionText, side, diceWriter, plies) {
  const w = writePosition(new Writer(), positionText, side);
  if (diceWriter) w.message(4, diceWriter);
  w.uint(5, plies);
  const m = await call("Evaluate", w);
  return {
    position: position(m.message(1)),
    probabilities: probabilities(m.message(2)),
    equity: m.float(3),
    evaluator: m.string(4),
    plies: m.uint(5),
    rankedPlays: m.messages(6).map((r) => {
      const play = r.message(1);
      return {
        notation: play ? play.string(2) : "",
        positionId: play ? position(play.message(3))?.positionId || play.string(5) : "",
        equity: r.float(2),
        probabilities: probabilities(r.message(3)),
      };
    }),
  };
}

/** ApplyPlay with the play in notation. */
export async function applyPlay(positionText, side, diceWriter, notation) {
  const w = writePosition(new Writer(), positionText, side);
  w.message(4, diceWriter);
  w.string(6, notation);
  const m = await call("ApplyPlay", w);
  return { position: position(m.message(1)), outcome: outcome(m.message(2)), notation: m.string(4) };
}
