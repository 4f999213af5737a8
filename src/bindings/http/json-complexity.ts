// Structural bounds of a JSON body, checked byte by byte as the body arrives and before
// JSON.parse sees it. JSON.parse of a 1 MB body of a million tiny values or ten thousand
// nested arrays costs tens of milliseconds of event loop and builds a large object graph; this
// scan costs one pass over the bytes, allocates nothing per value, and stops at the first bound
// passed. It does not validate JSON (JSON.parse still does): it only counts structure, and on
// malformed input it counts something harmless.
//
// Every structural character of JSON is ASCII, and UTF-8 never uses bytes below 0x80 inside a
// multi-byte sequence, so the bytes can be scanned without decoding them.
import type { JsonLimits } from '../../config/schema.ts';

export type JsonBound = 'depth' | 'objectKeys' | 'arrayLength' | 'nodes';

export interface JsonBoundExceeded {
  bound: JsonBound;
  limit: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

const isWhitespace = (byte: number): boolean => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;

/** Counts one JSON document's structure across chunks; `push` reports the first bound passed. */
export class JsonComplexityScanner {
  private inString = false;
  private escaped = false;
  /** Per open container: members seen so far (0 while it is still empty). */
  private readonly members: number[] = [];
  /** Per open container: true for an object. */
  private readonly isObject: boolean[] = [];
  private nodes = 0;

  constructor(private readonly limits: JsonLimits) {}

  /** Feeds the next bytes; returns the bound they pass, if any (the scanner then stays failed). */
  push(chunk: Uint8Array): JsonBoundExceeded | undefined {
    const { limits, members, isObject } = this;
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i] as number;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (byte === BACKSLASH) this.escaped = true;
        else if (byte === QUOTE) this.inString = false;
        continue;
      }
      if (isWhitespace(byte)) continue;
      const depth = members.length;
      if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
        members.pop();
        isObject.pop();
        continue;
      }
      if (byte === COMMA) {
        if (depth === 0) continue;
        const count = (members[depth - 1] as number) + 1;
        members[depth - 1] = count;
        const exceeded = this.countMember(count, isObject[depth - 1] as boolean);
        if (exceeded !== undefined) return exceeded;
        continue;
      }
      // Anything else starts or continues a value (or, inside an object, a key or its value).
      // The first such byte of a container is its first member.
      if (depth > 0 && members[depth - 1] === 0) {
        members[depth - 1] = 1;
        const exceeded = this.countMember(1, isObject[depth - 1] as boolean);
        if (exceeded !== undefined) return exceeded;
      } else if (depth === 0 && this.nodes === 0) {
        this.nodes = 1;
      }
      if (byte === QUOTE) {
        this.inString = true;
      } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
        if (depth + 1 > limits.maxDepth) return { bound: 'depth', limit: limits.maxDepth };
        members.push(0);
        isObject.push(byte === OPEN_OBJECT);
      }
    }
    return undefined;
  }

  private countMember(count: number, inObject: boolean): JsonBoundExceeded | undefined {
    const { limits } = this;
    this.nodes += 1;
    if (this.nodes > limits.maxNodes) return { bound: 'nodes', limit: limits.maxNodes };
    if (inObject && count > limits.maxObjectKeys) return { bound: 'objectKeys', limit: limits.maxObjectKeys };
    if (!inObject && count > limits.maxArrayLength) return { bound: 'arrayLength', limit: limits.maxArrayLength };
    return undefined;
  }
}

const DESCRIPTIONS: Record<JsonBound, (limit: number) => string> = {
  depth: (limit) => `nests objects and arrays deeper than ${limit} levels (jsonLimits.maxDepth)`,
  objectKeys: (limit) => `has an object with more than ${limit} members (jsonLimits.maxObjectKeys)`,
  arrayLength: (limit) => `has an array with more than ${limit} elements (jsonLimits.maxArrayLength)`,
  nodes: (limit) => `holds more than ${limit} values in all (jsonLimits.maxNodes)`,
};

/** What a refusal says: "the request body <description>". */
export function describeJsonBound(exceeded: JsonBoundExceeded): string {
  return DESCRIPTIONS[exceeded.bound](exceeded.limit);
}

/** Short code for the error's metadata.reason. */
export function jsonBoundReason(exceeded: JsonBoundExceeded): string {
  return { depth: 'JSON_TOO_DEEP', objectKeys: 'JSON_TOO_MANY_KEYS', arrayLength: 'JSON_ARRAY_TOO_LONG', nodes: 'JSON_TOO_MANY_VALUES' }[exceeded.bound];
}
