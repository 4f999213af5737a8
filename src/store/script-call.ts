// The typed boundary of the Lua scripts: each script is described once (its keys and arguments
// by name, in the order its Lua reads them, how each argument is encoded, how its reply is
// decoded) and called with named values. packScriptCall is the one place that turns those
// names into KEYS and ARGV.
import type { RedisClient } from '../redis/connection.ts';
import type { ReplayBound } from './replay-bound.ts';
import { defineScripts, type ScriptName, type ScriptReply, type ScriptRunner } from './scripts.ts';

export type ArgValue = string | number;

/**
 * How one named argument becomes ARGV: one value, or several (a list the Lua reads to its end,
 * or a fixed group). An encoder whose value may be undefined makes the argument optional.
 */
export type ArgEncoder<T> = (value: T) => ArgValue | readonly ArgValue[];

export type ScriptEncoders = Record<string, ArgEncoder<never>>;
type ValueOf<E> = E extends ArgEncoder<infer T> ? T : never;
type OptionalNames<E extends ScriptEncoders> = { [N in keyof E]: undefined extends ValueOf<E[N]> ? N : never }[keyof E];

/** The named arguments of a script: those whose encoder takes undefined may be left out. */
export type ScriptArgs<E extends ScriptEncoders> = { [N in Exclude<keyof E, OptionalNames<E>>]: ValueOf<E[N]> } & { [N in OptionalNames<E>]?: ValueOf<E[N]> };

export interface ScriptDefinition<K extends string, E extends ScriptEncoders, R, V extends string = never> {
  name: ScriptName;
  /** KEYS by name, in the Lua's order (a script that bounds the replay buffer names the push cursors last). */
  keys: readonly K[];
  /** A script of any number of keys: the name of the list that follows the named keys. */
  moreKeys?: V;
  /** ARGV by name, in the Lua's order (object key order), each with its encoding. */
  args: E;
  reply: (raw: ScriptReply) => R;
}

export type ScriptKeys<K extends string, V extends string> = Record<K, string> & Record<V, readonly string[]>;

/** Describes a script; the identity, for the types it infers. */
export const defineScript = <K extends string, E extends ScriptEncoders, R, V extends string = never>(definition: ScriptDefinition<K, E, R, V>): ScriptDefinition<K, E, R, V> =>
  definition;

/** The named keys and arguments as KEYS and ARGV, in the order the script's Lua reads them. */
export function packScriptCall<K extends string, E extends ScriptEncoders, R, V extends string>(
  definition: ScriptDefinition<K, E, R, V>,
  keys: ScriptKeys<K, V>,
  args: ScriptArgs<E>,
): { keys: string[]; argv: ArgValue[] } {
  const packedKeys: string[] = definition.keys.map((name) => keys[name]);
  if (definition.moreKeys !== undefined) packedKeys.push(...keys[definition.moreKeys]);
  const values = args as Record<string, unknown>;
  const argv: ArgValue[] = [];
  for (const [name, encode] of encodersOf(definition.args)) {
    const encoded = encode(values[name]);
    if (typeof encoded === 'object') for (const value of encoded) argv.push(value);
    else argv.push(encoded);
  }
  return { keys: packedKeys, argv };
}

/** A definition's encoders in ARGV order, listed once per definition rather than on every call (the hot path calls a few scripts per task). */
const encoderLists = new WeakMap<ScriptEncoders, readonly (readonly [string, ArgEncoder<unknown>])[]>();

function encodersOf(encoders: ScriptEncoders): readonly (readonly [string, ArgEncoder<unknown>])[] {
  let list = encoderLists.get(encoders);
  if (list === undefined) {
    list = Object.entries(encoders) as [string, ArgEncoder<unknown>][];
    encoderLists.set(encoders, list);
  }
  return list;
}

/** Runs a described script with named keys and arguments; its reply decoded. */
export async function callScript<K extends string, E extends ScriptEncoders, R, V extends string>(
  run: ScriptRunner,
  definition: ScriptDefinition<K, E, R, V>,
  keys: ScriptKeys<K, V>,
  args: ScriptArgs<E>,
): Promise<R> {
  const packed = packScriptCall(definition, keys, args);
  return definition.reply(await run(definition.name, packed.keys, packed.argv));
}

/** Runs described scripts on one connection: the way code outside the store calls a script. */
export type ScriptCaller = <K extends string, E extends ScriptEncoders, R, V extends string = never>(
  definition: ScriptDefinition<K, E, R, V>,
  keys: ScriptKeys<K, V>,
  args: ScriptArgs<E>,
) => Promise<R>;

/** Registers the scripts on `redis` (scripts.ts) and calls them by definition; `replay` bounds the scripts that append events. */
export function scriptCaller(redis: RedisClient, replay?: ReplayBound): ScriptCaller {
  const run = defineScripts(redis, replay);
  return (definition, keys, args) => callScript(run, definition, keys, args);
}

/** Encodings of the arguments, named for what the Lua expects. */
export const arg = {
  text: (value: string): ArgValue => value,
  int: (value: number): ArgValue => value,
  /** A count, bound or time where 0 means none (or no limit). */
  intOrZero: (value: number | undefined): ArgValue => value ?? 0,
  /** '' when absent. */
  optionalInt: (value: number | undefined): ArgValue => value ?? '',
  /** '' when absent. */
  optionalText: (value: string | undefined): ArgValue => value ?? '',
  /** '1' or '' (the Lua tests `== '1'` or `~= ''`). */
  flag: (value: boolean | undefined): ArgValue => (value === true ? '1' : ''),
  /** '1' or '0'. */
  bit: (value: boolean | undefined): ArgValue => (value === true ? '1' : '0'),
  json: <T>(): ArgEncoder<T> => (value) => JSON.stringify(value),
  /** '' when absent. */
  optionalJson: <T>(): ArgEncoder<T | undefined> => (value) => (value === undefined ? '' : JSON.stringify(value)),
  /** A JSON array, [] when absent. */
  jsonList: (value: readonly string[] | undefined): ArgValue => JSON.stringify(value ?? []),
  /** Values the Lua reads to the end of ARGV (or up to a fixed group after them). */
  each: (values: readonly ArgValue[]): readonly ArgValue[] => values,
  /** Each value as JSON, one argument each. */
  eachJson: <T>(): ArgEncoder<readonly T[]> => (values) => values.map((value) => JSON.stringify(value)),
};
