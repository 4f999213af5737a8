// Value shapes several settings share: ports, durations, booleans from the environment, names, lists.
import { z } from 'zod';

export const port = z.coerce.number().int().min(0).max(65535);
export const positiveMs = z.coerce.number().int().min(1);
export const booleanish = z.union([z.boolean(), z.enum(['true', 'false', '1', '0'])]).transform((v) => v === true || v === 'true' || v === '1');
export const shortName = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, "_", "." and "-" only, 1 to 64 characters');

/** Comma-separated in an environment variable, a list in a config file. */
export const stringList = z.preprocess(
  (v) => (typeof v === 'string' ? v.split(',').map((s) => s.trim()).filter((s) => s !== '') : v),
  z.array(z.string().min(1)),
);
