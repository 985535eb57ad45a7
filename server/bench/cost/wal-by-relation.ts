/**
 * What a run wrote, relation by relation: the WAL records between two positions, read back with
 * pg_walinspect (PostgreSQL 15+ contrib), grouped by the relation of each record's first block
 * and by record type. An index entry is one `Btree INSERT_LEAF` (or a split) of that index, a
 * row version one `Heap INSERT`, `UPDATE` or `HOT_UPDATE` of its table, a row lock one
 * `Heap LOCK`, so this counts index entries and row versions per job, which pg_stat_user_tables
 * (rows only) cannot. Records that touch no relation of the run's database (commits, and the
 * catalog's or other databases' blocks) are grouped by their record type under "(no relation)"
 * and "(other)".
 *
 * The positions are read with pg_current_wal_insert_lsn() around each phase, so other work in
 * the cluster in that window would count too: the bench's cluster runs one system at a time.
 * The end is capped at what is flushed (pg_walinspect reads no further); a phase ends with a
 * commit, which flushes, so nothing of it is left out.
 */
import { probeTag, withClient } from './pg-stats';

export interface WalPart {
  relation: string;
  recordType: string;
  records: number;
  bytes: number;
}

/** Where the cluster's WAL insertion stands now. */
export async function walPosition(url: string): Promise<string> {
  return withClient(url, async (c) => String((await c.query('SELECT pg_current_wal_insert_lsn() AS lsn')).rows[0].lsn));
}

/**
 * The WAL between `from` and `to`, by relation and record type, largest first. `databaseUrl` is
 * the run's database: pg_walinspect is created there (superuser: the bench's own cluster) and
 * its relations are named from its pg_class.
 */
export async function walByRelation(databaseUrl: string, from: string, to: string): Promise<WalPart[]> {
  return withClient(databaseUrl, async (c) => {
    await c.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    const rows = await c.query(
      // Grouped by block before relations are named: naming each record by a lookup in pg_class
      // called pg_relation_filenode once per class row per record, 18 s for a batched run's
      // 900,000 records, where this takes well under one.
      `WITH records AS (
         SELECT resource_manager || ' ' || split_part(record_type, ' ', 1) AS record_type, record_length,
           substring(block_ref FROM 'rel \\d+/(\\d+)/\\d+')::oid AS db_oid,
           substring(block_ref FROM 'rel \\d+/\\d+/(\\d+)')::oid AS filenode
         FROM pg_get_wal_records_info($1::pg_lsn, least($2::pg_lsn, pg_current_wal_flush_lsn()))
       ), by_block AS (
         SELECT db_oid, filenode, record_type, count(*) AS records, sum(record_length) AS bytes FROM records GROUP BY 1, 2, 3
       ), named AS (
         SELECT pg_relation_filenode(oid) AS filenode, relname FROM pg_class WHERE NOT relisshared AND pg_relation_filenode(oid) IS NOT NULL
       )
       SELECT CASE WHEN b.db_oid IS NULL THEN '(no relation)'
                   WHEN b.db_oid <> (SELECT oid FROM pg_database WHERE datname = current_database()) THEN '(other)'
                   ELSE coalesce(n.relname, '(other)') END AS relation,
              b.record_type, sum(b.records) AS records, sum(b.bytes) AS bytes
       FROM by_block b LEFT JOIN named n ON n.filenode = b.filenode
       GROUP BY 1, 2 ORDER BY sum(b.bytes) DESC ${probeTag}`,
      [from, to],
    );
    return rows.rows.map((r) => ({ relation: String(r.relation), recordType: String(r.record_type), records: Number(r.records), bytes: Number(r.bytes) }));
  });
}
