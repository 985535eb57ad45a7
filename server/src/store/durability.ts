/**
 * What a crash of the embedded store can lose, said at start-up and in the README.
 * Measured and explained in docs/embedded-store.md.
 */
export const embeddedDurabilityNote =
  'embedded PGlite store: for development and tests only. Commits are not fsynced to disk, so an OS crash or power loss can lose recent commits or corrupt the data directory; use DATABASE_URL (PostgreSQL) in production';
