export interface Page<T> {
  items: T[];
  /** Opaque position after the last item, or null when there is nothing more. */
  nextCursor: string | null;
}
