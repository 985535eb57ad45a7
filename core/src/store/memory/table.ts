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
    return row === undefined ? undefined : structuredClone(row);
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
    this.rows.set(key, structuredClone(value));
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
