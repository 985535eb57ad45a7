/**
 * A map whose writes can be rolled back: each write inside a transaction pushes its inverse
 * onto the transaction's undo log. Values are cloned in and out, so a caller can never change
 * stored state by mutating an object it was given.
 */
export class MemoryTable<V> {
  private readonly rows = new Map<string, V>();

  constructor(private readonly undoLog: () => (() => void)[] | undefined) {}

  get(key: string): V | undefined {
    const row = this.rows.get(key);
    return row === undefined ? undefined : cloneRow(row);
  }

  /** The live value, not a clone: for a filter that looks before it clones (never hand it out). */
  peek(key: string): V | undefined {
    return this.rows.get(key);
  }

  has(key: string): boolean {
    return this.rows.has(key);
  }

  set(key: string, value: V): void {
    const undo = this.undoLog();
    if (undo) {
      const had = this.rows.has(key);
      const before = this.rows.get(key);
      undo.push(() => (had ? this.rows.set(key, before as V) : this.rows.delete(key)));
    }
    this.rows.set(key, cloneRow(value));
  }

  delete(key: string): void {
    if (!this.rows.has(key)) return;
    const before = this.rows.get(key) as V;
    this.undoLog()?.push(() => this.rows.set(key, before));
    this.rows.delete(key);
  }

  /** Live values, not clones: for scans that filter and then clone what they return. */
  *scan(): IterableIterator<V> {
    yield* this.rows.values();
  }

  get size(): number {
    return this.rows.size;
  }
}

/**
 * A deep copy of a stored row, as structuredClone makes one, several times faster for what rows
 * hold (plain objects and arrays of strings, numbers, booleans, bigints and null: the simulator
 * spends much of its time here). Anything else (a Date, a Map, a typed array) goes to
 * structuredClone, so the copy is never shallower than before.
 */
export function cloneRow<T>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = cloneRow(value[i]);
    return out as T;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) out[k] = cloneRow((value as Record<string, unknown>)[k]);
  return out as T;
}
