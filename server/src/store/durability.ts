/**
 * What a crash of the embedded store can lose, said at start-up and in the README.
 * Measured and explained in docs/embedded-store.md.
 */
export const embeddedDurabilityNote =
  'embedded PGlite store, for development and tests: each commit is fsynced before it is acknowledged, so a crash of this process loses nothing acknowledged, and an OS crash or power loss loses nothing acknowledged only if the disk honours flushes. One process per data directory; use DATABASE_URL (PostgreSQL) in production. See docs/embedded-store.md';
