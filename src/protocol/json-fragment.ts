// JSON text built elsewhere (a large task's artifacts, assembled off the event loop) and spliced
// into an answer as it is. Parsing tens of megabytes into objects only to serialize them again
// held the gateway's event loop for a quarter of a second per answer, and every other caller
// with it. An answer holding a fragment is serialized by serializeAnswer only: JSON.stringify
// meets the fragment's placeholder there, and the fragment's bytes take its place. Anywhere else
// a fragment throws instead of writing a placeholder into someone's output.
import { randomBytes } from 'node:crypto';

/** Unguessable, so that no caller's own text can be taken for a placeholder. */
const TOKEN = `\u0000json-fragment:${randomBytes(12).toString('hex')}:`;

/** The fragments met by the serialization in progress (JSON.stringify is synchronous: one at a time). */
let collecting: JsonFragment[] | undefined;

export class JsonFragment {
  /** `bytes`: UTF-8 JSON text of one value. */
  constructor(readonly bytes: Uint8Array) {}

  toJSON(): string {
    if (collecting === undefined) {
      throw new Error('a prebuilt JSON fragment reached a serializer that cannot splice it: only serializeAnswer may serialize an answer that holds one');
    }
    collecting.push(this);
    return `${TOKEN}${collecting.length - 1}`;
  }
}

/** What serializeAnswer made: the text, or the byte pieces to write in order when fragments were spliced in. */
export type SerializedAnswer = string | Uint8Array[];

/** JSON.stringify(value), with every JsonFragment's bytes in its place. */
export function serializeAnswer(value: unknown): SerializedAnswer {
  return serializeFramed(value, (json) => json);
}

/**
 * serializeAnswer with `frame` around the JSON text (a stream's frame: JSON-RPC's envelope, say).
 * `frame` must copy the text it is given into what it returns untouched, as concatenation does:
 * the fragments' placeholders are looked for in what it returns (one missing throws).
 */
export function serializeFramed(value: unknown, frame: (json: string) => string): SerializedAnswer {
  const fragments: JsonFragment[] = [];
  collecting = fragments;
  let text: string;
  try {
    text = JSON.stringify(value);
  } finally {
    collecting = undefined;
  }
  if (fragments.length === 0) return frame(text);
  const framed = frame(text);
  const pieces: Uint8Array[] = [];
  let from = 0;
  fragments.forEach((fragment, index) => {
    // As JSON.stringify wrote the placeholder: quoted, its NUL escaped.
    const placeholder = JSON.stringify(`${TOKEN}${index}`);
    const at = framed.indexOf(placeholder, from);
    if (at < 0) throw new Error('a JSON fragment placeholder went missing while its answer was serialized');
    pieces.push(Buffer.from(framed.slice(from, at)), fragment.bytes);
    from = at + placeholder.length;
  });
  pieces.push(Buffer.from(framed.slice(from)));
  return pieces;
}

/** Bytes an answer takes on the wire. */
export function answerBytes(answer: SerializedAnswer): number {
  return typeof answer === 'string' ? Buffer.byteLength(answer) : answer.reduce((sum, piece) => sum + piece.byteLength, 0);
}
