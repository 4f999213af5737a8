// Deterministic pseudo-random choices for the chaos run. Every random decision (which worker
// dies, when, how many charges a task makes) comes from a seeded generator, so a failing run
// can be repeated with the same CHAOS_SEED. Each concern gets its own stream (fork), because
// the load, the fault injector and the stream watcher run concurrently: sharing one generator
// would make each one's choices depend on how their awaits happened to interleave.

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
  chance(probability: number): boolean;
  /** An independent generator derived from this seed and a label. */
  fork(label: string): Random;
}

/** mulberry32: tiny, fast, and good enough to pick victims and delays. */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new Error('cannot pick from an empty list');
      return items[Math.floor(next() * items.length)] as T;
    },
    chance: (probability) => next() < probability,
    fork: (label) => seededRandom(hashLabel(seed, label)),
  };
}

function hashLabel(seed: number, label: string): number {
  // FNV-1a over the label, mixed with the seed: stable across runs and platforms.
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < label.length; i++) {
    hash ^= label.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
