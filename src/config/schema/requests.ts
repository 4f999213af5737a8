// How request bodies and proxy headers are read: JSON structure bounds and trusted proxies.
import { z } from 'zod';

/**
 * Structural bounds of a JSON request body, checked while the body arrives and before it is
 * parsed: a body past one is refused with -32600 / 400 naming the bound, at a cost linear in
 * its size however it is shaped.
 */
export const jsonLimitsSchema = z.strictObject({
  /** Deepest nesting of objects and arrays (reason JSON_TOO_DEEP). */
  maxDepth: z.coerce.number().int().min(8).max(1000).default(64),
  /** Most members of one object (JSON_TOO_MANY_KEYS). */
  maxObjectKeys: z.coerce.number().int().min(16).default(1_000),
  /** Most elements of one array (JSON_ARRAY_TOO_LONG). */
  maxArrayLength: z.coerce.number().int().min(16).default(10_000),
  /** Most values in the whole document, every object member and array element counted (JSON_TOO_MANY_VALUES). */
  maxNodes: z.coerce.number().int().min(64).default(100_000),
});
export type JsonLimits = z.infer<typeof jsonLimitsSchema>;

/**
 * Which reverse proxies may tell the gateway, through `Forwarded` (RFC 7239) or
 * `X-Forwarded-For/-Proto/-Host/-Prefix`, the client's address and the URL the client
 * addressed: false (default: the headers are ignored), true (any peer), or a list of
 * addresses and CIDR ranges of trusted proxies (`loopback`, `linklocal` and `uniquelocal`
 * name the usual ranges). In the environment: `true`, `false` or a comma-separated list.
 */
export const trustProxySchema = z
  .union([
    z.boolean(),
    z.array(z.string().min(1)).min(1),
    z.string().transform((value, context) => {
      const trimmed = value.trim();
      if (['true', '1'].includes(trimmed)) return true;
      if (['false', '0', ''].includes(trimmed)) return false;
      const list = trimmed.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
      if (list.length === 0) context.addIssue({ code: 'custom', message: 'true, false, or a comma-separated list of proxy addresses' });
      return list;
    }),
  ])
  .default(false);
export type TrustProxySetting = boolean | string[];
