// For a TCK run on a machine without outside DNS (docs/conformance.md): answers name lookups
// for the hosts listed in TCK_RESOLVE ("example.com=127.0.0.1,other=::1") from that list, and
// every other name as usual. The TCK registers webhooks at https://example.com/…; the gateway
// resolves a webhook's host when the config is created (to refuse internal addresses), so
// without DNS that registration fails before the protocol is tested at all. Only this process
// is affected (node --import ./tools/conformance/resolve-hosts.mjs …); the machine's resolver
// is left alone. Not for production: it exists for the conformance run only.
import dns from 'node:dns';
import { syncBuiltinESMExports } from 'node:module';

const table = new Map(
  (process.env.TCK_RESOLVE ?? '')
    .split(',')
    .map((entry) => entry.trim().split('='))
    .filter((pair) => pair.length === 2 && pair[0] !== '' && pair[1] !== '')
    .map(([host, address]) => [host.toLowerCase(), { address, family: address.includes(':') ? 6 : 4 }]),
);

const originalPromiseLookup = dns.promises.lookup;
const originalLookup = dns.lookup;

function answer(entry, options) {
  const all = typeof options === 'object' && options !== null && options.all === true;
  return all ? [entry] : entry;
}

dns.promises.lookup = async function lookup(hostname, options) {
  const entry = table.get(String(hostname).toLowerCase());
  return entry ? answer(entry, options) : originalPromiseLookup.call(this, hostname, options);
};

dns.lookup = function lookup(hostname, options, callback) {
  const done = typeof options === 'function' ? options : callback;
  const entry = table.get(String(hostname).toLowerCase());
  if (!entry) return originalLookup.call(this, hostname, options, callback);
  const result = answer(entry, typeof options === 'function' ? {} : options);
  process.nextTick(() => (Array.isArray(result) ? done(null, result) : done(null, result.address, result.family)));
  return undefined;
};

// ES modules that imported `lookup` by name see the replacements only after this.
syncBuiltinESMExports();
