import type { Generated } from 'kysely';

/** Row types of the match jobs' tables (migration 0036), with the conventions of schema.ts. */

/** The match jobs' tables, as `Database` (schema.ts) holds them. */
export interface MatchTables {
  match_jobs: MatchJobsTable;
  match_row_usage: MatchRowUsageTable;
}

/** Rows of match jobs an account had matched in a calendar month (migration 0036). */
export interface MatchRowUsageTable {
  account_id: number;
  month: string;
  row_count: Generated<number>;
}

/** A match job (`POST /api/v2/match/jobs`): an uploaded list matched against the catalog in the background (migration 0036). */
export interface MatchJobsTable {
  id: Generated<number>;
  /** `mjob_` + random. */
  public_id: string;
  account_id: number;
  /** csv, xlsx or ndjson. */
  input_format: string;
  /** The upload's file name as the client sent it. */
  input_name: string;
  /** The upload's name under the data directory; null once the job has ended and it was deleted. */
  input_file: string | null;
  input_bytes: number;
  /** JSON: record field → header of the upload. */
  mapping: string;
  /** null: the matcher's default. */
  threshold: number | null;
  /** 1: every matched place becomes a lead of the account. */
  as_leads: Generated<number>;
  webhook_url: string | null;
  status: 'queued' | 'running' | 'succeeded' | 'failed';
  failure: string | null;
  attempts: Generated<number>;
  /** Data rows of the upload (counted when it was received). */
  row_count: number;
  /** Rows of the current attempt written so far, and what they came to. */
  rows_done: Generated<number>;
  matched: Generated<number>;
  closed: Generated<number>;
  bad_rows: Generated<number>;
  file_name: string | null;
  file_bytes: number | null;
  download_name: string | null;
  /** Rows taken from the month's quota (`charged_month`) when the job was created; what bad rows did not use is given back. */
  charged_rows: Generated<number>;
  charged_month: string | null;
  runner: string | null;
  lease_until: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}
